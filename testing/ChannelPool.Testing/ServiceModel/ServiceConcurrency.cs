using System.Diagnostics.CodeAnalysis;

namespace ChannelPool.Testing.ServiceModel;

/// <summary>
/// How a test service serves the calls of one session: WCF's <c>ConcurrencyMode</c> on a service whose instances live
/// per session (<c>InstanceContextMode.PerSession</c>). It applies where there are sessions: the net.tcp host's sessions
/// and the security sessions of the WS-SecureConversation endpoint. Sessionless endpoints (BasicHttps, WSHttp without a
/// security context) serve every request at once whatever it says, as WCF does: its dispatcher pumps a channel
/// without a session concurrently even under <c>Single</c> (<c>ConcurrencyBehavior.IsConcurrent</c>).
/// </summary>
public enum ServiceConcurrency
{
    /// <summary>
    /// One call at a time per session, as a WCF service serves with its defaults (<c>PerSession</c> and
    /// <c>ConcurrencyMode.Single</c>): the next call of a session is taken only after the current call's reply has been
    /// sent, in the order the calls arrived. Calls of different sessions still run at once.
    /// </summary>
    [SuppressMessage("Naming", "CA1720:Identifier contains type name", Justification = "WCF's own name for the mode, ConcurrencyMode.Single.")]
    Single,

    /// <summary>
    /// A session's calls run at once (<c>ConcurrencyMode.Multiple</c>): the next call is read while the current one
    /// runs, and replies go out as calls finish, in any order.
    /// </summary>
    Multiple,
}
