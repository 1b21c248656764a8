using System.Net;
using System.Text.Json;
using ChannelPool.PollingDuplex.Client;

namespace ChannelPool.PollingDuplex.Tests;

/// <summary>
/// The .NET client retries an open whose answer was lost or cut, with the same openId, so the server answers with the
/// session the lost answer named: no second session, no orphan.
/// </summary>
public class ClientOpenRetryTests
{
    [TestCase(true, TestName = "{m}(answer lost)")]
    [TestCase(false, TestName = "{m}(answer cut inside its body)")]
    public async Task AnOpenWhoseAnswerIsLostOrCut_IsRetriedWithItsOpenId_AndGetsTheSessionTheLostAnswerNamed(bool lose)
    {
        await using var server = await DuplexTestServer.StartAsync(o => o.ServerPollTimeout = TimeSpan.FromMilliseconds(300));
        BreakFirstOpen? breaker = null;
        using var http = DuplexTestServer.CreateHttpClient(wrap: inner => breaker = new BreakFirstOpen(inner, lose));
        var client = new PollingDuplexClient(http, server.Duplex, new PollingDuplexClientOptions { RetryBaseDelay = TimeSpan.FromMilliseconds(10) });

        await using var session = await client.OpenSessionAsync();

        Assert.That(breaker!.Opens, Is.EqualTo(2), "the open was sent twice");
        Assert.That(breaker.OpenIds.Distinct().ToList(), Has.Count.EqualTo(1), "with one openId");
        Assert.That(session.Id, Is.EqualTo(breaker.LostSessionId), "the retry got the session the lost answer named");
    }

    /// <summary>Lets the first open reach the server, then loses its answer or cuts its body; passes everything else.</summary>
    private sealed class BreakFirstOpen(HttpMessageHandler inner, bool lose) : DelegatingHandler(inner)
    {
        public int Opens;

        public List<string> OpenIds { get; } = [];

        public string? LostSessionId { get; private set; }

        protected override async Task<HttpResponseMessage> SendAsync(HttpRequestMessage request, CancellationToken cancellationToken)
        {
            var isOpen = request.Method == HttpMethod.Post && request.RequestUri!.AbsolutePath.EndsWith("/sessions", StringComparison.Ordinal);
            if (isOpen)
            {
                using var body = JsonDocument.Parse(await request.Content!.ReadAsStringAsync(cancellationToken));
                OpenIds.Add(body.RootElement.GetProperty("openId").GetString()!);
            }

            var response = await base.SendAsync(request, cancellationToken);
            if (!isOpen || Interlocked.Increment(ref Opens) > 1)
            {
                return response;
            }

            var text = await response.Content.ReadAsStringAsync(cancellationToken);
            using (var answer = JsonDocument.Parse(text))
            {
                LostSessionId = answer.RootElement.GetProperty("sessionId").GetString();
            }

            if (lose)
            {
                response.Dispose();
                throw new HttpRequestException("Injected fault: the connection was reset after the server answered.");
            }

            var cut = new HttpResponseMessage(HttpStatusCode.Created) { Content = new StringContent(text[..(text.Length / 2)], System.Text.Encoding.UTF8, "application/json"), RequestMessage = request };
            response.Dispose();
            return cut;
        }
    }
}
