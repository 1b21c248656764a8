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

    /// <summary>
    /// Returns <paramref name="text"/> after the service has spent <paramref name="milliseconds"/> on the call, waiting
    /// as a call to a database or another service does: the call holds its session for that long, but no thread or CPU.
    /// A service time of 0 to <see cref="TestContract.MaxServiceTimeMilliseconds"/> is served; any other is answered
    /// with a fault that says so.
    /// </summary>
    /// <remarks>WCF names the operation <c>EchoAfter</c>; the suffix marks the task-returning form.</remarks>
    [OperationContract]
    Task<string> EchoAfterAsync(string text, int milliseconds);
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

    /// <summary>
    /// The XML namespace of the <c>traceparent</c> and <c>tracestate</c> SOAP headers a pooled client sends on net.tcp, as
    /// docs/observability.md documents it for services to read.
    /// </summary>
    public const string TraceContextNamespace = "urn:channelpool:trace-context";

    /// <summary>The longest service time <see cref="IEchoService.EchoAfterAsync"/> serves: one minute.</summary>
    public const int MaxServiceTimeMilliseconds = 60_000;

    /// <summary>Checks a service time asked of <see cref="IEchoService.EchoAfterAsync"/>.</summary>
    /// <param name="milliseconds">The service time asked for.</param>
    /// <returns>Why it is not served, for the fault; <see langword="null"/> when it is.</returns>
    internal static string? ServiceTimeProblem(int milliseconds) => milliseconds is < 0 or > MaxServiceTimeMilliseconds
        ? $"EchoAfter serves a service time of 0 to {MaxServiceTimeMilliseconds} ms; it was asked for {milliseconds} ms."
        : null;

    /// <summary>Reads a service time as a hand-written endpoint receives it, the parameter's text.</summary>
    /// <param name="text">The <c>milliseconds</c> parameter as it came.</param>
    /// <param name="milliseconds">The service time, when it is served.</param>
    /// <returns>Why it is not served, for the fault; <see langword="null"/> when it is.</returns>
    internal static string? ServiceTimeProblem(string? text, out int milliseconds) =>
        int.TryParse(text, System.Globalization.NumberStyles.Integer, System.Globalization.CultureInfo.InvariantCulture, out milliseconds)
            ? ServiceTimeProblem(milliseconds)
            : $"EchoAfter needs a service time in milliseconds; it got '{text}'.";
}
