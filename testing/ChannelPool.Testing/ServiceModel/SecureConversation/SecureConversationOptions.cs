namespace ChannelPool.Testing.ServiceModel.SecureConversation;

/// <summary>How the test service's WS-SecureConversation endpoint issues and expires security context tokens.</summary>
public sealed class SecureConversationOptions
{
    /// <summary>
    /// Gets or sets how long an issued token is valid, from its issue; it is returned to the client as the token's
    /// lifetime. The default, 10 hours, is a WCF service's default (<c>IssuedCookieLifetime</c>).
    /// </summary>
    public TimeSpan TokenLifetime { get; set; } = TimeSpan.FromHours(10);

    /// <summary>
    /// Gets or sets how long a token may go unused before the service forgets it. The default, 2 minutes, is a WCF
    /// service's default security session inactivity timeout; it is the limit a pooled idle channel meets first.
    /// </summary>
    public TimeSpan InactivityTimeout { get; set; } = TimeSpan.FromMinutes(2);

    /// <summary>Gets or sets how far a message's timestamp may be off the service's clock. The default is 5 minutes, as in WCF.</summary>
    public TimeSpan MaxClockSkew { get; set; } = TimeSpan.FromMinutes(5);

    /// <summary>
    /// Gets or sets how one security session's calls are served. <see cref="ServiceConcurrency.Multiple"/> (at once) by
    /// default, as the pool's tests were written against; <see cref="ServiceConcurrency.Single"/> serves them one at a
    /// time, in arrival order, as a WCF service with its default settings does.
    /// </summary>
    public ServiceConcurrency Concurrency { get; set; } = ServiceConcurrency.Multiple;

    /// <summary>Gets or sets the clock for token lifetimes and inactivity, so tests can move time on instead of waiting.</summary>
    public TimeProvider TimeProvider { get; set; } = TimeProvider.System;
}
