using System.Net;

namespace ChannelPool.PollingDuplex.Tests;

/// <summary>
/// Sits between a client and the network and breaks things on purpose, from a seeded random source so a failure can
/// be replayed: requests that never reach the server, responses lost after the server acted on them, and poll
/// responses cut off part-way through their body.
/// </summary>
internal sealed class FaultInjectingHandler(HttpMessageHandler inner, int seed) : DelegatingHandler(inner)
{
    private readonly Random _random = new(seed);
    private readonly Lock _lock = new();
    private TaskCompletionSource? _pollGate;

    public double DropRequestRate { get; set; }

    public double LoseResponseRate { get; set; }

    public double CutResponseRate { get; set; }

    public int DroppedRequests;

    public int LostResponses;

    public int CutResponses;

    /// <summary>Holds every poll until <see cref="ResumePolls"/>, as a client that stopped talking would.</summary>
    public void PausePolls()
    {
        using (_lock.EnterScope())
        {
            _pollGate ??= new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
        }
    }

    public void ResumePolls()
    {
        TaskCompletionSource? gate;
        using (_lock.EnterScope())
        {
            gate = _pollGate;
            _pollGate = null;
        }

        gate?.TrySetResult();
    }

    protected override async Task<HttpResponseMessage> SendAsync(HttpRequestMessage request, CancellationToken cancellationToken)
    {
        var isPoll = request.RequestUri!.AbsolutePath.EndsWith("/poll", StringComparison.Ordinal);
        if (isPoll && _pollGate is { } gate)
        {
            await gate.Task.WaitAsync(cancellationToken);
        }

        if (Roll(DropRequestRate))
        {
            Interlocked.Increment(ref DroppedRequests);
            throw new HttpRequestException("Injected fault: the connection failed before the request was sent.");
        }

        var response = await base.SendAsync(request, cancellationToken);
        if (response.StatusCode is not (HttpStatusCode.OK or HttpStatusCode.NoContent))
        {
            return response;
        }

        if (Roll(LoseResponseRate))
        {
            // The server has acted on the request; the client never learns of it.
            await response.Content.LoadIntoBufferAsync(cancellationToken);
            response.Dispose();
            Interlocked.Increment(ref LostResponses);
            throw new HttpRequestException("Injected fault: the response was lost.");
        }

        if (isPoll && response.StatusCode == HttpStatusCode.OK && Roll(CutResponseRate))
        {
            var body = await response.Content.ReadAsByteArrayAsync(cancellationToken);
            var cut = body.Length <= 1 ? 0 : Next(body.Length - 1) + 1;
            Interlocked.Increment(ref CutResponses);
            response.Content = new StreamContent(new CutStream(body, cut)) { Headers = { ContentType = response.Content.Headers.ContentType } };
        }

        return response;
    }

    private bool Roll(double rate)
    {
        using (_lock.EnterScope())
        {
            return rate > 0 && _random.NextDouble() < rate;
        }
    }

    private int Next(int max)
    {
        using (_lock.EnterScope())
        {
            return _random.Next(max);
        }
    }

    /// <summary>Yields the first bytes of a body, then fails as a reset connection does.</summary>
    private sealed class CutStream(byte[] body, int cut) : Stream
    {
        private int _position;

        public override bool CanRead => true;

        public override bool CanSeek => false;

        public override bool CanWrite => false;

        public override long Length => throw new NotSupportedException();

        public override long Position { get => _position; set => throw new NotSupportedException(); }

        public override int Read(byte[] buffer, int offset, int count)
        {
            if (_position >= cut)
            {
                throw new IOException("Injected fault: the connection was reset mid-response.");
            }

            var n = Math.Min(count, cut - _position);
            Array.Copy(body, _position, buffer, offset, n);
            _position += n;
            return n;
        }

        public override void Flush()
        {
        }

        public override long Seek(long offset, SeekOrigin origin) => throw new NotSupportedException();

        public override void SetLength(long value) => throw new NotSupportedException();

        public override void Write(byte[] buffer, int offset, int count) => throw new NotSupportedException();
    }
}
