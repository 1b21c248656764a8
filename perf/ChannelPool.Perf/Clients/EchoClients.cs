using System.ServiceModel;
using System.ServiceModel.Channels;
using ChannelPool.ServiceModel;
using ChannelPool.Testing.ServiceModel;

namespace ChannelPool.Perf.Clients;

/// <summary>
/// The client's view of the test services' echo operation, in its Task form only: a synchronous WCF call blocks a thread
/// for the whole round trip, and 32 blocked callers would measure thread-pool starvation, not proxies.
/// </summary>
[ServiceContract(Namespace = TestContract.Namespace, Name = nameof(IEchoService))]
public interface IEchoClient
{
    [OperationContract]
    Task<string> EchoAsync(string text);

    /// <summary>The echo after a service time: the service waits <paramref name="milliseconds"/> before it answers.</summary>
    [OperationContract]
    Task<string> EchoAfterAsync(string text, int milliseconds);
}

/// <summary>
/// The same contract again, for <see cref="CachedEchoClient"/>: <c>ClientBase&lt;T&gt;.CacheSetting</c> is a static of
/// each closed type, so the per-call-with-cache proxies need a <c>T</c> of their own to leave the plain per-call ones alone.
/// </summary>
[ServiceContract(Namespace = TestContract.Namespace, Name = nameof(IEchoService))]
public interface ICachedEchoClient : IEchoClient;

/// <summary>A proxy as apps write it: <c>ClientBase</c> built from a binding and an address.</summary>
internal sealed class EchoClient(Binding binding, EndpointAddress address) : ClientBase<IEchoClient>(binding, address), IEchoClient
{
    public Task<string> EchoAsync(string text) => Channel.EchoAsync(text);

    public Task<string> EchoAfterAsync(string text, int milliseconds) => Channel.EchoAfterAsync(text, milliseconds);
}

/// <summary>The per-call proxy with <c>CacheSetting.AlwaysOn</c> set for its type before the first one is made.</summary>
internal sealed class CachedEchoClient : ClientBase<ICachedEchoClient>, IEchoClient
{
    static CachedEchoClient() => CacheSetting = System.ServiceModel.CacheSetting.AlwaysOn;

    public CachedEchoClient(Binding binding, EndpointAddress address)
        : base(binding, address)
    {
    }

    public Task<string> EchoAsync(string text) => Channel.EchoAsync(text);

    public Task<string> EchoAfterAsync(string text, int milliseconds) => Channel.EchoAfterAsync(text, milliseconds);
}

/// <summary>The same proxy with its base class swapped for <see cref="PooledClientBase{TContract}"/>, and nothing else changed.</summary>
internal sealed class PooledEchoClient(ServiceChannelPool<IEchoClient> pool) : PooledClientBase<IEchoClient>(pool), IEchoClient
{
    public Task<string> EchoAsync(string text) => Channel.EchoAsync(text);

    public Task<string> EchoAfterAsync(string text, int milliseconds) => Channel.EchoAfterAsync(text, milliseconds);
}
