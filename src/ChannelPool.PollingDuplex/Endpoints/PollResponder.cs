using System.IO.Pipelines;
using ChannelPool.PollingDuplex.Stores;
using Microsoft.AspNetCore.Http;

namespace ChannelPool.PollingDuplex;

/// <summary>Each way a poll can end; the <c>pollingduplex.poll.outcome</c> tag.</summary>
internal enum PollOutcome
{
    /// <summary>200: frames were written.</summary>
    Messages,

    /// <summary>204: nothing came within the poll timeout.</summary>
    Empty,

    /// <summary>409: a newer poll of the session replaced this one.</summary>
    Superseded,

    /// <summary>410 (or 403, 404): the session ended while the poll was held.</summary>
    Ended,

    /// <summary>No answer: the client went away, or the store failed mid-response.</summary>
    Aborted,
}

/// <summary>
/// Answers one poll from its store: holds it until the first frame, for at most the poll timeout, then writes what is
/// ready and, in the multiple-message mode, streams what else comes within the batch window.
/// </summary>
internal sealed class PollResponder(PollingDuplexOptions options, TimeProvider time)
{
    /// <summary>How many bytes a streaming response buffers before it flushes while frames keep coming.</summary>
    private const int FlushThreshold = 64 * 1024;

    public async Task<PollOutcome> AnswerAsync(HttpContext context, DuplexPoll poll, long started)
    {
        var aborted = context.RequestAborted;
        var frames = new List<DuplexFrame>();

        // A single-message response carries one frame; a multiple-message one at most MaxPendingMessagesPerSession, after
        // which it ends, so the client acknowledges and what is held unacknowledged stays bounded.
        var limit = poll.Mode == PollingDuplexMode.SingleMessagePerPoll ? 1 : options.MaxPendingMessagesPerSession;

        // Wait for the first frame, for at most the poll timeout.
        while (true)
        {
            var take = await poll.TakeAsync(frames, limit, aborted);
            if (take.Status == DuplexTakeStatus.Frames)
            {
                break;
            }

            if (take.Status == DuplexTakeStatus.Superseded)
            {
                await DuplexProblems.WriteSupersededAsync(context, poll.SessionId);
                return PollOutcome.Superseded;
            }

            if (take.Status == DuplexTakeStatus.LookupFailed)
            {
                await DuplexProblems.WriteLookupFailureAsync(context, poll.SessionId, take.Lookup);
                return PollOutcome.Ended;
            }

            var remaining = options.ServerPollTimeout - time.GetElapsedTime(started);
            if (remaining <= TimeSpan.Zero)
            {
                context.Response.StatusCode = StatusCodes.Status204NoContent;
                context.Response.Headers.CacheControl = "no-store";
                return PollOutcome.Empty;
            }

            if (!await WaitAsync(take.Wake!, remaining, aborted) && aborted.IsCancellationRequested)
            {
                return PollOutcome.Aborted;
            }
        }

        var response = context.Response;
        poll.Responding = true;
        response.StatusCode = StatusCodes.Status200OK;
        response.ContentType = DuplexWire.ContentTypeOf(poll.Encoding);
        response.Headers.CacheControl = "no-store";
        var output = response.BodyWriter;

        // The batch window pays off only for a session whose messages come close together: one whose poll waited longer
        // than the window for its first frame would get nothing more in it, so it is answered at once, in one write with
        // a Content-Length, as the least an HTTP exchange costs (docs/performance.md, "Floor").
        if (poll.Mode == PollingDuplexMode.SingleMessagePerPoll || frames.Count >= limit || time.GetElapsedTime(started) >= options.BatchWindow)
        {
            response.ContentLength = Length(poll.Encoding, frames);
            Write(output, poll.Encoding, frames);
            return PollOutcome.Messages;
        }

        try
        {
            Write(output, poll.Encoding, frames);

            // Keep the response open for the batch window, streaming frames as they come. Frames that are ready together
            // go out in one flush: the response flushes only before it waits, or when a lot is buffered.
            var carried = frames.Count;
            var windowStarted = time.GetTimestamp();
            while (carried < limit)
            {
                frames.Clear();
                var taking = poll.TakeAsync(frames, limit - carried, aborted);
                if (!taking.IsCompleted)
                {
                    // The store went over the network: what is written goes out while it answers.
                    await output.FlushAsync(aborted);
                }

                var take = await taking;
                if (take.Status == DuplexTakeStatus.Frames)
                {
                    carried += frames.Count;
                    Write(output, poll.Encoding, frames);
                    if (!output.CanGetUnflushedBytes || output.UnflushedBytes >= FlushThreshold)
                    {
                        await output.FlushAsync(aborted);
                    }

                    continue;
                }

                await output.FlushAsync(aborted);
                var remaining = options.BatchWindow - time.GetElapsedTime(windowStarted);
                if (take.Status != DuplexTakeStatus.Waiting || remaining <= TimeSpan.Zero || !await WaitAsync(take.Wake!, remaining, aborted))
                {
                    return PollOutcome.Messages;
                }
            }

            await output.FlushAsync(aborted);
            return PollOutcome.Messages;
        }
        catch (OperationCanceledException) when (aborted.IsCancellationRequested)
        {
            // The client went away mid-response; its next poll, with the same ack, gets these frames again.
            return PollOutcome.Aborted;
        }
    }

    private static long Length(DuplexEncoding encoding, List<DuplexFrame> frames)
    {
        long length = 0;
        foreach (var frame in frames)
        {
            length += DuplexFrameWriter.ServerFrameLength(encoding, frame);
        }

        return length;
    }

    private static void Write(PipeWriter output, DuplexEncoding encoding, List<DuplexFrame> frames)
    {
        foreach (var frame in frames)
        {
            if (frame.Message is { } message)
            {
                DuplexFrameWriter.WriteServerMessage(output, encoding, frame.Sequence, message);
            }
            else
            {
                DuplexFrameWriter.WriteGap(output, encoding, frame.Sequence, frame.Missed);
            }
        }
    }

    /// <summary>Waits for the signal, the timeout or the cancellation, whichever is first, without throwing.</summary>
    private async Task<bool> WaitAsync(Task signal, TimeSpan timeout, CancellationToken cancellationToken)
    {
        if (!signal.IsCompleted)
        {
            await signal.WaitAsync(timeout, time, cancellationToken).ConfigureAwait(ConfigureAwaitOptions.SuppressThrowing);
        }

        return signal.IsCompleted;
    }
}
