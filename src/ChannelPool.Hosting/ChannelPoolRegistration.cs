namespace ChannelPool.Hosting;

/// <summary>One registered pool, as the hosted service and health checks find it.</summary>
/// <param name="Name">The pool's name, which is also its service key.</param>
/// <param name="ChannelType">The pool's channel type.</param>
internal sealed record ChannelPoolRegistration(string Name, Type ChannelType);
