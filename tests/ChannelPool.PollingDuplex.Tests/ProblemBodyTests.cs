using System.Net;
using System.Text.Json;
using Microsoft.Extensions.DependencyInjection;

namespace ChannelPool.PollingDuplex.Tests;

/// <summary>Every refusal under the endpoint is a problem body with a code, written by the host's problem-details service.</summary>
public class ProblemBodyTests
{
    [Test]
    public async Task Problems_GoThroughTheHostsProblemDetailsService_SoItsCustomisationApplies()
    {
        await using var server = await DuplexTestServer.StartAsync(services: s => s.AddProblemDetails(p =>
            p.CustomizeProblemDetails = c => c.ProblemDetails.Extensions["host"] = "customised"));
        using var http = DuplexTestServer.CreateHttpClient();
        var session = await RawSession.OpenAsync(http, server.Duplex);

        using var bad = await session.PollAsync("minus-one");

        var problem = await RawSession.AssertProblemAsync(bad, HttpStatusCode.BadRequest, "bad-ack");
        Assert.That(problem.GetProperty("host").GetString(), Is.EqualTo("customised"));
        Assert.That(problem.GetProperty("type").GetString(), Is.EqualTo("urn:channelpool:polling-duplex:bad-ack"));
    }

    [Test]
    public async Task WrongMethod_Is405_WithAllow_AndAProblemBody()
    {
        await using var server = await DuplexTestServer.StartAsync();
        using var http = DuplexTestServer.CreateHttpClient();

        using var put = await http.PutAsync(new Uri(server.Duplex + "/sessions"), RawSession.JsonContent("{}"));
        using var get = await http.GetAsync(new Uri(server.Duplex + "/sessions/abc/messages"));

        await RawSession.AssertProblemAsync(put, HttpStatusCode.MethodNotAllowed, "method-not-allowed");
        Assert.That(put.Content.Headers.Allow, Is.EquivalentTo(new[] { "POST" }));
        await RawSession.AssertProblemAsync(get, HttpStatusCode.MethodNotAllowed, "method-not-allowed");
        Assert.That(get.Content.Headers.Allow, Is.EquivalentTo(new[] { "POST" }));
    }

    [TestCase("/nothing-here")]
    [TestCase("/sessions/abc/poll/extra")]
    [TestCase("")]
    public async Task UnknownPathUnderTheEndpoint_Is404_WithAProblemBody(string path)
    {
        await using var server = await DuplexTestServer.StartAsync();
        using var http = DuplexTestServer.CreateHttpClient();

        using var response = await http.GetAsync(new Uri(server.Duplex + path));

        await RawSession.AssertProblemAsync(response, HttpStatusCode.NotFound, "not-found");
    }

    [Test]
    public async Task Open_ReportsEveryLimitTheClientShouldKnow()
    {
        await using var server = await DuplexTestServer.StartAsync(o =>
        {
            o.MaxPendingBytesPerSession = 300_000;
            o.MaxSendRequestSize = 200_000;
            o.BatchWindow = TimeSpan.FromMilliseconds(7);
        });
        using var http = DuplexTestServer.CreateHttpClient();

        using var open = await http.PostAsync(new Uri(server.Duplex + "/sessions"), RawSession.JsonContent("{}"));
        using var json = JsonDocument.Parse(await open.Content.ReadAsStringAsync());
        var root = json.RootElement;

        Assert.Multiple(() =>
        {
            Assert.That(root.GetProperty("maxPendingBytes").GetInt32(), Is.EqualTo(300_000));
            Assert.That(root.GetProperty("maxSendRequestSize").GetInt32(), Is.EqualTo(200_000));
            Assert.That(root.GetProperty("batchWindowMs").GetInt32(), Is.EqualTo(7));
            Assert.That(root.GetProperty("firstPollTimeoutMs").GetInt32(), Is.GreaterThan(0));
            Assert.That(root.GetProperty("overflowPolicy").GetString(), Is.EqualTo("fault"));
        });
    }
}
