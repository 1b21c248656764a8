using System.Net;
using System.Net.Http.Headers;
using System.Text;
using System.Text.Json;

namespace ChannelPool.PollingDuplex.Tests;

/// <summary>
/// Drives the protocol by hand with nothing but HttpClient and System.Text.Json, as a client written from
/// docs/polling-duplex-protocol.md would.
/// </summary>
internal sealed class RawSession
{
    private readonly HttpClient _http;

    private RawSession(HttpClient http, Uri endpoint, string id, string token)
    {
        _http = http;
        Endpoint = endpoint;
        Id = id;
        Token = token;
    }

    public Uri Endpoint { get; }

    public string Id { get; }

    public string Token { get; set; }

    public static async Task<RawSession> OpenAsync(HttpClient http, Uri endpoint, string encoding = "text", string mode = "multiple", string? openId = null)
    {
        var idMember = openId is null ? string.Empty : $",\"openId\":\"{openId}\"";
        using var response = await http.PostAsync(new Uri(endpoint + "/sessions"), JsonContent($"{{\"encoding\":\"{encoding}\",\"mode\":\"{mode}\"{idMember}}}"));
        Assert.That(response.StatusCode, Is.EqualTo(HttpStatusCode.Created), await response.Content.ReadAsStringAsync());
        using var json = JsonDocument.Parse(await response.Content.ReadAsStringAsync());
        return new RawSession(http, endpoint, json.RootElement.GetProperty("sessionId").GetString()!, json.RootElement.GetProperty("token").GetString()!);
    }

    /// <summary>A session known only by its id and token, to send requests on it (or on one that does not exist).</summary>
    public static RawSession Attach(HttpClient http, Uri endpoint, string id, string token) => new(http, endpoint, id, token);

    /// <summary>The same session, its requests sent to another address: another node of a cluster.</summary>
    public RawSession At(Uri endpoint) => new(_http, endpoint, Id, Token);

    public static StringContent JsonContent(string json) => new(json, Encoding.UTF8, "application/json");

    public Task<HttpResponseMessage> SendAsync(byte[] body, string contentType = "application/x-ndjson") =>
        SendRawAsync(HttpMethod.Post, $"/sessions/{Id}/messages", new ByteArrayContent(body) { Headers = { ContentType = MediaTypeHeaderValue.Parse(contentType) } });

    public Task<HttpResponseMessage> SendTextAsync(string ndjson) => SendAsync(Encoding.UTF8.GetBytes(ndjson));

    public Task<HttpResponseMessage> PollAsync(string ack) => SendRawAsync(HttpMethod.Get, $"/sessions/{Id}/poll?ack={ack}");

    public Task<HttpResponseMessage> PollAsync(long ack) => PollAsync(ack.ToString(System.Globalization.CultureInfo.InvariantCulture));

    public Task<HttpResponseMessage> CloseAsync() => SendRawAsync(HttpMethod.Delete, $"/sessions/{Id}");

    public async Task<HttpResponseMessage> SendRawAsync(HttpMethod method, string path, HttpContent? content = null, string? token = null)
    {
        using var request = new HttpRequestMessage(method, new Uri(Endpoint + path)) { Content = content, Version = _http.DefaultRequestVersion, VersionPolicy = _http.DefaultVersionPolicy };
        if ((token ?? Token) is { Length: > 0 } bearer)
        {
            request.Headers.Add(DuplexWire.SessionTokenHeader, bearer);
        }

        return await _http.SendAsync(request);
    }

    /// <summary>Reads a problem body and checks its status and code.</summary>
    public static async Task<JsonElement> AssertProblemAsync(HttpResponseMessage response, HttpStatusCode status, string code)
    {
        var body = await response.Content.ReadAsStringAsync();
        Assert.That(response.StatusCode, Is.EqualTo(status), body);
        Assert.That(response.Content.Headers.ContentType?.MediaType, Is.EqualTo("application/problem+json"), body);
        using var json = JsonDocument.Parse(body);
        Assert.That(json.RootElement.GetProperty("code").GetString(), Is.EqualTo(code), body);
        Assert.That(json.RootElement.GetProperty("status").GetInt32(), Is.EqualTo((int)status));
        Assert.That(json.RootElement.GetProperty("detail").GetString(), Is.Not.Empty);
        return json.RootElement.Clone();
    }
}
