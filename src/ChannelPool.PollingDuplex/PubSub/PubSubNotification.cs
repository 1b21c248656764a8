namespace ChannelPool.PollingDuplex.PubSub;

/// <summary>The message a publish sends to a topic's subscribers: <c>{"topic":"t","data":&lt;the data&gt;}</c>.</summary>
internal static class PubSubNotification
{
    /// <summary>
    /// Serializes a notification once, for both encodings: every subscriber's frame carries these same bytes. The topic is
    /// copied as escaped and the data without line breaks, so the notification is shorter than the publish command.
    /// </summary>
    /// <param name="topic">The topic's name.</param>
    /// <param name="escapedTopic">The name as JSON string content, escaped as the publisher wrote it.</param>
    /// <param name="data">One JSON value, checked.</param>
    /// <param name="limit">The endpoint's MaxMessageSize.</param>
    /// <param name="fromClient">Whether a client's command asked for this, which makes an oversized notification its error.</param>
    /// <exception cref="DuplexMessageRejectedException">A client's notification would exceed <paramref name="limit"/>.</exception>
    /// <exception cref="ArgumentException">A server-side notification would exceed <paramref name="limit"/>.</exception>
    public static DuplexMessage Create(string topic, ReadOnlySpan<byte> escapedTopic, ReadOnlySpan<byte> data, int limit, bool fromClient)
    {
        var payload = new byte["{\"topic\":\"\",\"data\":}"u8.Length + escapedTopic.Length + data.Length];
        var written = 0;
        void Append(ReadOnlySpan<byte> bytes)
        {
            bytes.CopyTo(payload.AsSpan(written));
            written += bytes.Length;
        }

        Append("{\"topic\":\""u8);
        Append(escapedTopic);
        Append("\",\"data\":"u8);
        Append(data);
        Append("}"u8);

        // Valid by construction; the protocol checks it once more and takes out the data's line breaks, if any.
        var notification = DuplexMessage.FromJsonUtf8(payload);
        if (notification.Payload.Length > limit)
        {
            var reason = $"Published to \"{topic}\", the notification would be {notification.Payload.Length} bytes, over the endpoint's {limit}-byte MaxMessageSize.";
            throw fromClient ? new DuplexMessageRejectedException(reason) : new ArgumentException(reason, nameof(data));
        }

        return notification;
    }
}
