using System.IdentityModel.Tokens;
using System.Security.Authentication;
using System.ServiceModel;
using System.ServiceModel.Security;

namespace ChannelPool.ServiceModel;

/// <summary>
/// The WCF adapter's rule for <see cref="ChannelPoolOptions.IsFatalError"/>: which errors mean that every channel
/// opened so far is suspect, so the pool clears. <see cref="ServiceChannelPool{TContract}"/> uses
/// <see cref="IsSecurityFailure"/> when the option is left null.
/// </summary>
public static class FatalErrors
{
    /// <summary>
    /// Says whether <paramref name="error"/>, or an exception inside it, is a failure of the channel's security with the
    /// service rather than of one call: a security negotiation that failed (<see cref="SecurityNegotiationException"/>,
    /// for example a TLS handshake whose server certificate is no longer the one trusted, or a security context token
    /// the service refused to issue), a message the service's security layer rejected
    /// (<see cref="MessageSecurityException"/>, for example a security context token it no longer knows after a restart),
    /// a TLS authentication failure (<see cref="AuthenticationException"/>), or a rejected certificate
    /// (<see cref="SecurityTokenValidationException"/>).
    /// </summary>
    /// <remarks>
    /// Each of these means the service's security state changed (a certificate replaced, a restart, a failover to a
    /// node with other keys), and every channel negotiated before the change is suspect: clearing replaces them all in
    /// one step, instead of one failed call per channel. Transport errors (a dropped connection, a timeout, the server
    /// down), authorization refusals and service faults are not on the list: they are one call's or one channel's
    /// trouble, or the breaker's business, and clearing on them would throw away healthy channels.
    /// </remarks>
    /// <param name="error">An error an open or a call threw.</param>
    /// <returns><see langword="true"/> when the pool should clear.</returns>
    public static bool IsSecurityFailure(Exception error)
    {
        for (var current = error; current is not null; current = current.InnerException)
        {
            if (current is SecurityNegotiationException or MessageSecurityException or AuthenticationException or SecurityTokenValidationException)
            {
                return true;
            }
        }

        return false;
    }
}
