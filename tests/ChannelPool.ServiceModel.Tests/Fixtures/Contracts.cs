using System.ServiceModel;
using ChannelPool.Testing.ServiceModel;

namespace ChannelPool.ServiceModel.Tests.Fixtures;

/// <summary>The README's drop-in contract: the test services' echo operation under the example's own names.</summary>
[ServiceContract(Namespace = TestContract.Namespace, Name = nameof(IEchoService))]
public interface ISomeService
{
    [OperationContract]
    string Echo([MessageParameter(Name = "text")] string s);
}

/// <summary>The README's drop-in example, exactly as written there.</summary>
public class MyProxy : PooledClientBase<ISomeService>, ISomeService
{
    public string Echo(string s) => Channel.Echo(s);
}

/// <summary>A proxy for the full test contract, for DI and the binding-and-address constructor.</summary>
public class EchoProxy : PooledClientBase<IEchoService>, IEchoService
{
    public EchoProxy()
    {
    }

    public EchoProxy(System.ServiceModel.Channels.Binding binding, EndpointAddress address)
        : base(binding, address)
    {
    }

    public EchoProxy(ServiceChannelPool<IEchoService> pool)
        : base(pool)
    {
    }

    public string Echo(string text) => Channel.Echo(text);

    public string Fail(string reason) => Channel.Fail(reason);

    public string WhoAmI() => Channel.WhoAmI();

    public Task<string> EchoAfterAsync(string text, int milliseconds) => Channel.EchoAfterAsync(text, milliseconds);
}

/// <summary>A proxy for the sessionful contract.</summary>
public class CounterProxy(ServiceChannelPool<ISessionCounter> pool) : PooledClientBase<ISessionCounter>(pool), ISessionCounter
{
    public int Increment() => Channel.Increment();
}

/// <summary>
/// The echo operation in its asynchronous form, for tests that make many concurrent calls: a synchronous WCF call
/// blocks a thread for its whole round trip, and a handful of them starve the thread pool of a 2-core machine.
/// </summary>
[ServiceContract(Namespace = TestContract.Namespace, Name = nameof(IEchoService))]
public interface IAsyncEchoService
{
    [OperationContract(Name = nameof(IEchoService.Echo))]
    Task<string> EchoAsync(string text);
}

/// <summary>A proxy for <see cref="IAsyncEchoService"/>.</summary>
public class AsyncEchoProxy(ServiceChannelPool<IAsyncEchoService> pool) : PooledClientBase<IAsyncEchoService>(pool), IAsyncEchoService
{
    public Task<string> EchoAsync(string text) => Channel.EchoAsync(text);
}

/// <summary>
/// The echo operation in the asynchronous programming model (<c>AsyncPattern</c>): a <c>Begin</c>/<c>End</c> pair, as
/// older generated clients have it.
/// </summary>
[ServiceContract(Namespace = TestContract.Namespace, Name = nameof(IEchoService))]
public interface IApmEchoService
{
    [OperationContract(AsyncPattern = true)]
    IAsyncResult BeginEcho(string text, AsyncCallback? callback, object? state);

    string EndEcho(IAsyncResult result);
}

/// <summary>A proxy for <see cref="IApmEchoService"/>.</summary>
public class ApmEchoProxy(ServiceChannelPool<IApmEchoService> pool) : PooledClientBase<IApmEchoService>(pool), IApmEchoService
{
    public IAsyncResult BeginEcho(string text, AsyncCallback? callback, object? state) => Channel.BeginEcho(text, callback, state);

    public string EndEcho(IAsyncResult result) => Channel.EndEcho(result);
}
