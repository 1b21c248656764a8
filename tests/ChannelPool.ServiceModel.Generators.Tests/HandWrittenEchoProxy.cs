using ChannelPool.Testing;
using ChannelPool.Testing.ServiceModel;

namespace ChannelPool.ServiceModel.Generators.Tests;

/// <summary>
/// A hand-written pooled proxy that lets the generator write its boilerplate: the contract's other operations and the
/// standard constructors. The one operation it declares itself is left to it.
/// </summary>
[PooledClient]
public partial class HandWrittenEchoProxy : PooledClientBase<IEchoService>
{
    public string Echo(string text) => "by hand: " + Channel.Echo(text);
}
