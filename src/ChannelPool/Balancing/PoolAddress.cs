namespace ChannelPool;

/// <summary>One address a <see cref="BalancedChannelPool{TChannel}"/> opens channels to.</summary>
public sealed class PoolAddress : IEquatable<PoolAddress>
{
    /// <summary>Creates an address.</summary>
    /// <param name="uri">Where channels connect.</param>
    /// <param name="hostName">The host name <paramref name="uri"/> was resolved from, or null when it was given as is.</param>
    public PoolAddress(Uri uri, string? hostName = null)
    {
        ArgumentNullException.ThrowIfNull(uri);
        Uri = uri;
        HostName = hostName;
    }

    /// <summary>Where channels connect: the configured address, or, when host names are resolved, one of its IP addresses.</summary>
    public Uri Uri { get; }

    /// <summary>
    /// The host name <see cref="Uri"/> was resolved from, or null. A channel factory for a TLS binding checks the
    /// service's certificate against this name, not against the IP address it connects to.
    /// </summary>
    public string? HostName { get; }

    /// <inheritdoc/>
    public bool Equals(PoolAddress? other) => other is not null && Uri.Equals(other.Uri) && string.Equals(HostName, other.HostName, StringComparison.OrdinalIgnoreCase);

    /// <inheritdoc/>
    public override bool Equals(object? obj) => Equals(obj as PoolAddress);

    /// <inheritdoc/>
    public override int GetHashCode() => Uri.GetHashCode();

    /// <inheritdoc/>
    public override string ToString() => HostName is null ? Uri.ToString() : $"{Uri} ({HostName})";
}
