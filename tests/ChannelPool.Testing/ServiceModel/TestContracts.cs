using System.ServiceModel;

namespace ChannelPool.Testing.ServiceModel;

/// <summary>The stateless test contract every test service serves.</summary>
[ServiceContract(Namespace = TestContract.Namespace)]
public interface IEchoService
{
    /// <summary>Returns <paramref name="text"/> unchanged.</summary>
    [OperationContract]
    string Echo(string text);

    /// <summary>Always answers with an application fault (a <see cref="FaultException"/>) whose reason is <paramref name="reason"/>.</summary>
    [OperationContract]
    string Fail(string reason);

    /// <summary>Returns the authenticated user name, or "anonymous".</summary>
    [OperationContract]
    string WhoAmI();
}

/// <summary>
/// A contract that requires a session: each channel is one server-side session with its own counter, so state shows
/// which channel a call went over. Only the net.tcp host serves it (HTTP bindings here have no sessions).
/// </summary>
[ServiceContract(Namespace = TestContract.Namespace, SessionMode = SessionMode.Required)]
public interface ISessionCounter
{
    /// <summary>Adds one to this session's counter and returns the new value (1 on a fresh session).</summary>
    [OperationContract]
    int Increment();
}

/// <summary>Names shared by the test contracts and the hosts that serve them.</summary>
public static class TestContract
{
    /// <summary>The XML namespace of the test contracts.</summary>
    public const string Namespace = "urn:channelpool:tests";
}
