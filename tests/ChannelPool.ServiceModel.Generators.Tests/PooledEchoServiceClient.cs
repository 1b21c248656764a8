using ChannelPool.ServiceModel;

namespace ServiceReference;

/// <summary>
/// The pooled twin of the generated <see cref="EchoServiceClient"/>: one line of the application's own, beside an
/// unchanged <c>Reference.cs</c>. The generator writes its operations, constructors and <c>UseEndpoint</c>.
/// </summary>
[PooledClient(typeof(EchoServiceClient))]
public partial class PooledEchoServiceClient : PooledClientBase<IEchoService>;
