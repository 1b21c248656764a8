using System.Net.Http.Headers;
using System.Text;
using System.Text.Json;

namespace ChannelPool.PollingDuplex.Tests.Redis;

/// <summary>Bad requests through the balancer to the Redis store are answered exactly as one in-memory node answers them.</summary>
public class RedisBadInputTests
{
    private static readonly (string Name, Func<HttpClient, Uri, Task<HttpResponseMessage>> Request)[] Cases =
    [
        ("open body not JSON", (http, at) => http.PostAsync(new Uri(at + "/sessions"), RawSession.JsonContent("nope"))),
        ("open with unknown encoding", (http, at) => http.PostAsync(new Uri(at + "/sessions"), RawSession.JsonContent("{\"encoding\":\"morse\"}"))),
        ("open with unknown mode", (http, at) => http.PostAsync(new Uri(at + "/sessions"), RawSession.JsonContent("{\"mode\":\"some\"}"))),
        ("open body too large", (http, at) => http.PostAsync(new Uri(at + "/sessions"), RawSession.JsonContent("{\"x\":\"" + new string('x', 5000) + "\"}"))),
        ("poll without token", (http, at) => http.GetAsync(new Uri(at + "/sessions/abc/poll?ack=0"))),
        ("poll of unknown session", (http, at) => Raw(http, at, "abc", "t").PollAsync(0)),
        ("poll of unknown session with a bad ack", (http, at) => Raw(http, at, "abc", "t").PollAsync("x")),
        ("poll with a bad ack", async (http, at) => await (await RawSession.OpenAsync(http, at)).PollAsync("-1")),
        ("poll with an ack beyond what was sent", async (http, at) => await (await RawSession.OpenAsync(http, at)).PollAsync(5)),
        ("poll with another session's token", async (http, at) =>
        {
            var a = await RawSession.OpenAsync(http, at);
            var b = await RawSession.OpenAsync(http, at);
            return await Raw(http, at, a.Id, b.Token).PollAsync(0);
        }),
        ("send with the wrong content type", async (http, at) => await (await RawSession.OpenAsync(http, at)).SendAsync(Encoding.UTF8.GetBytes("{}"), "text/plain")),
        ("send of a malformed frame", async (http, at) => await (await RawSession.OpenAsync(http, at)).SendTextAsync("{\"seq\":1}\n")),
        ("send out of order", async (http, at) => await (await RawSession.OpenAsync(http, at)).SendTextAsync("{\"seq\":2,\"data\":{\"op\":\"subscribe\",\"topic\":\"t\"}}\n")),
        ("send of an unknown op", async (http, at) => await (await RawSession.OpenAsync(http, at)).SendTextAsync("{\"seq\":1,\"data\":{\"op\":\"shout\",\"topic\":\"t\"}}\n")),
        ("send of a publish without data", async (http, at) => await (await RawSession.OpenAsync(http, at)).SendTextAsync("{\"seq\":1,\"data\":{\"op\":\"publish\",\"topic\":\"t\"}}\n")),
        ("send after close", async (http, at) =>
        {
            var s = await RawSession.OpenAsync(http, at);
            (await s.CloseAsync()).Dispose();
            return await s.SendTextAsync("{\"seq\":1,\"data\":{\"op\":\"subscribe\",\"topic\":\"t\"}}\n");
        }),
        ("close twice", async (http, at) =>
        {
            var s = await RawSession.OpenAsync(http, at);
            (await s.CloseAsync()).Dispose();
            return await s.CloseAsync();
        }),
        ("unknown path", (http, at) => http.GetAsync(new Uri(at + "/elsewhere"))),
        ("wrong method", (http, at) => http.PutAsync(new Uri(at + "/sessions"), RawSession.JsonContent("{}"))),
    ];

    [Test]
    public async Task EveryBadRequest_GetsTheSameStatusAndCode_AsOnOneNode()
    {
        await using var single = await DuplexTestServer.StartAsync(o => o.ServerPollTimeout = TimeSpan.FromMilliseconds(200), https: false);
        await using var cluster = await DuplexCluster.StartAsync(configure: o => o.ServerPollTimeout = TimeSpan.FromMilliseconds(200));
        using var http = DuplexCluster.CreateHttpClient();
        var onOne = new List<string>();
        var throughBalancer = new List<string>();
        foreach (var (name, request) in Cases)
        {
            onOne.Add($"{name}: {await DescribeAsync(await request(http, new Uri(single.PubSub.ToString().TrimEnd('/'))))}");
            throughBalancer.Add($"{name}: {await DescribeAsync(await request(http, cluster.PubSub))}");
        }

        Assert.That(throughBalancer, Is.EqualTo(onOne));
        Assert.That(onOne.Count(d => d.Contains(" 4", StringComparison.Ordinal)), Is.GreaterThanOrEqualTo(Cases.Length - 1), "the cases really are bad requests");
    }

    private static RawSession Raw(HttpClient http, Uri at, string id, string token) => RawSession.Attach(http, at, id, token);

    private static async Task<string> DescribeAsync(HttpResponseMessage response)
    {
        using (response)
        {
            var code = "";
            if (response.Content.Headers.ContentType is MediaTypeHeaderValue { MediaType: "application/problem+json" })
            {
                using var json = JsonDocument.Parse(await response.Content.ReadAsStringAsync());
                code = json.RootElement.GetProperty("code").GetString()!;
            }

            return $"{(int)response.StatusCode} {code} {response.Content.Headers.Allow}".TrimEnd();
        }
    }
}
