using System.Diagnostics;
using System.Text.Json;

namespace ChannelPool.PollingDuplex.Tests;

/// <summary>The protocol document's curl walk-through, run with the real curl, against a plain-HTTP server.</summary>
public class CurlTests
{
    [Test]
    public async Task TheDocumentsCurlCommands_OpenSendPollAndClose()
    {
        Assume.That(CurlIsInstalled(), "curl is not installed on this machine.");
        await using var server = await DuplexTestServer.StartAsync(o => o.ServerPollTimeout = TimeSpan.FromMilliseconds(300), https: false);
        var baseUrl = server.PubSub.ToString();

        var open = await CurlAsync("-s", "-X", "POST", $"{baseUrl}/sessions", "-H", "Content-Type: application/json", "-d", "{\"encoding\":\"text\",\"mode\":\"multiple\",\"openId\":\"curl-walkthrough-0001\"}");
        using var opened = JsonDocument.Parse(open);

        // The same open again, as a retry after a lost answer: the same session, not a second one.
        using var repeated = JsonDocument.Parse(await CurlAsync("-s", "-X", "POST", $"{baseUrl}/sessions", "-H", "Content-Type: application/json", "-d", "{\"encoding\":\"text\",\"mode\":\"multiple\",\"openId\":\"curl-walkthrough-0001\"}"));
        Assert.That(repeated.RootElement.GetProperty("sessionId").GetString(), Is.EqualTo(opened.RootElement.GetProperty("sessionId").GetString()));

        // Without application/json: 415.
        var form = await CurlAsync("-s", "-o", "/dev/null", "-w", "%{http_code}", "-X", "POST", $"{baseUrl}/sessions", "-d", "encoding=text");
        Assert.That(form, Is.EqualTo("415"));
        var id = opened.RootElement.GetProperty("sessionId").GetString();
        var token = opened.RootElement.GetProperty("token").GetString();

        var sent = await CurlAsync("-s", "-X", "POST", $"{baseUrl}/sessions/{id}/messages", "-H", $"Duplex-Session-Token: {token}", "-H", "Content-Type: application/x-ndjson",
            "--data-binary", "{\"seq\":1,\"data\":{\"op\":\"subscribe\",\"topic\":\"t\"}}\n{\"seq\":2,\"data\":{\"op\":\"publish\",\"topic\":\"t\",\"data\":\"hi\",\"echo\":true}}\n");
        var polled = await CurlAsync("-s", "-N", $"{baseUrl}/sessions/{id}/poll?ack=0", "-H", $"Duplex-Session-Token: {token}");
        var empty = await CurlAsync("-s", "-o", "/dev/null", "-w", "%{http_code}", $"{baseUrl}/sessions/{id}/poll?ack=1", "-H", $"Duplex-Session-Token: {token}");
        var closed = await CurlAsync("-s", "-o", "/dev/null", "-w", "%{http_code}", "-X", "DELETE", $"{baseUrl}/sessions/{id}", "-H", $"Duplex-Session-Token: {token}");

        Assert.That(sent, Is.EqualTo("{\"received\":2}"));
        Assert.That(polled.Trim(), Is.EqualTo("{\"seq\":1,\"type\":\"message\",\"data\":{\"topic\":\"t\",\"data\":\"hi\"}}"));
        Assert.That(empty, Is.EqualTo("204"));
        Assert.That(closed, Is.EqualTo("204"));
    }

    private static bool CurlIsInstalled() =>
        Environment.GetEnvironmentVariable("PATH")?.Split(Path.PathSeparator).Any(dir => File.Exists(Path.Combine(dir, "curl"))) == true;

    private static async Task<string> CurlAsync(params string[] arguments)
    {
        var start = new ProcessStartInfo("curl") { RedirectStandardOutput = true, RedirectStandardError = true };
        foreach (var argument in arguments)
        {
            start.ArgumentList.Add(argument);
        }

        using var process = Process.Start(start)!;
        var output = await process.StandardOutput.ReadToEndAsync().WaitAsync(Eventually.Limit);
        await process.WaitForExitAsync().WaitAsync(Eventually.Limit);
        Assert.That(process.ExitCode, Is.EqualTo(0), await process.StandardError.ReadToEndAsync());
        return output;
    }
}
