namespace ChannelPool.PollingDuplex.BrowserHost;

/// <summary>
/// Sends every message straight back on its session, in either encoding. The text message <c>"reject me"</c> is refused
/// (<c>422</c>) and <c>"fail me"</c> makes the handler fail (<c>500 handler-failed</c>), so the tests reach both answers.
/// </summary>
internal sealed class EchoHandler : PollingDuplexHandler
{
    public override ValueTask OnMessageAsync(DuplexSession session, DuplexMessage message, CancellationToken cancellationToken)
    {
        switch (message.IsJson ? message.ToString() : null)
        {
            case "\"reject me\"":
                throw new DuplexMessageRejectedException("this message asked to be rejected");
            case "\"fail me\"":
                throw new InvalidOperationException("this message asked the application to fail");
        }

        session.Send(message);
        return ValueTask.CompletedTask;
    }
}
