using System.Reflection;
using System.ServiceModel.Description;

namespace ChannelPool.ServiceModel;

/// <summary>What the span and the measurement of a call to one operation of one endpoint say, worked out once.</summary>
/// <param name="Method">The fully qualified method, <c>{contract}/{operation}</c>: <c>rpc.method</c>, and the span's name.</param>
/// <param name="ServerAddress">The service's host: <c>server.address</c>.</param>
/// <param name="ServerPort">The service's port: <c>server.port</c>.</param>
internal sealed record CallTarget(string Method, string ServerAddress, int ServerPort)
{
    /// <summary>Gets <see cref="ServerPort"/> boxed once, for the span's and the measurement's tags: not once a call.</summary>
    public object BoxedPort { get; } = ServerPort;

    public static CallTarget For(ServiceEndpoint endpoint, MethodInfo method)
    {
        // WCF's own names: [ServiceContract(Name)] and [OperationContract(Name)], with Async, Begin and End removed.
        var operation = endpoint.Contract.Operations.FirstOrDefault(
            candidate => candidate.SyncMethod == method || candidate.TaskMethod == method || candidate.BeginMethod == method || candidate.EndMethod == method);
        var uri = endpoint.Address.Uri;
        return new CallTarget($"{endpoint.Contract.Name}/{operation?.Name ?? method.Name}", uri.Host, uri.Port);
    }
}
