using ChannelPool.Perf.Clients;
using ChannelPool.Perf.Peers;
using ChannelPool.Perf.Reporting;
using ChannelPool.Perf.Scenarios;
using ChannelPool.Perf.Servers;
using Spectre.Console;

namespace ChannelPool.Perf.Tests;

/// <summary>How many clients the broadcast search may try: the open-file limit bounds HTTP/1.1, not HTTP/2.</summary>
internal sealed class ClientCapacityTests
{
    [Test]
    public async Task Http2Clients_ShareSockets_SoTheOpenFileLimitAllowsAHundredTimesMoreOfThem()
    {
        await using var context = new PerfContext(
            null, new PerfServerSettings(), AnsiConsole.Create(new AnsiConsoleSettings { Out = new AnsiConsoleOutput(TextWriter.Null) }), new PerfReport(RunInfo.Capture("ChannelPool.Perf", "none", new Dictionary<string, string>())), quick: false, PerfPeers.None);
        var limit = ClientHttp.OpenFileLimit();

        var http11 = context.CapacityFor(ClientProtocol.Http11);
        var http2 = context.CapacityFor(ClientProtocol.Http2);

        Assert.That(http11, Is.EqualTo(context.ClientCapacity));
        Assert.That(http11, Is.LessThan(limit), "over HTTP/1.1 every client is a socket");
        Assert.That(http2, Is.GreaterThanOrEqualTo(Math.Min(40L * http11, 1_000_000)), $"over HTTP/2 up to {PerfServer.Http2StreamsPerConnection} polls share a socket");
    }
}
