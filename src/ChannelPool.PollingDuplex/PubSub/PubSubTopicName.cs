using System.Globalization;

namespace ChannelPool.PollingDuplex.PubSub;

/// <summary>
/// The one rule for topic names, from clients and from the server alike: 1 to <see cref="PubSubHandler.MaxTopicLength"/>
/// UTF-16 code units, valid Unicode, no control characters. A name that passes is safe as a log field and as part of a
/// key in a shared store.
/// </summary>
internal static class PubSubTopicName
{
    /// <summary>Returns what is wrong with <paramref name="topic"/>, or <see langword="null"/> when it is a valid name.</summary>
    public static string? Check(string? topic)
    {
        if (string.IsNullOrEmpty(topic) || topic.Length > PubSubHandler.MaxTopicLength)
        {
            return $"A topic must be 1 to {PubSubHandler.MaxTopicLength} characters; it was {topic?.Length ?? 0}.";
        }

        for (var i = 0; i < topic.Length; i++)
        {
            var c = topic[i];
            if (char.IsControl(c))
            {
                return $"A topic must not hold control characters; it holds U+{((int)c).ToString("X4", CultureInfo.InvariantCulture)} at position {i}.";
            }

            if (char.IsHighSurrogate(c) && i + 1 < topic.Length && char.IsLowSurrogate(topic[i + 1]))
            {
                i++;
            }
            else if (char.IsSurrogate(c))
            {
                return $"A topic must be valid Unicode text; it holds an unpaired surrogate at position {i}.";
            }
        }

        return null;
    }

    /// <summary>Throws <see cref="ArgumentException"/> naming what is wrong with <paramref name="topic"/>, if anything.</summary>
    public static void ThrowIfInvalid(string topic, string paramName)
    {
        ArgumentNullException.ThrowIfNull(topic, paramName);
        if (Check(topic) is { } problem)
        {
            throw new ArgumentException(problem, paramName);
        }
    }
}
