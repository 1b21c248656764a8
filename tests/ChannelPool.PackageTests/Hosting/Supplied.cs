// The quick start's channel factory, which the README's host example reuses (MyChannel comes from ../QuickStart).
using ChannelPool;

#pragma warning disable CA1515 // The README's own types are public; these stand beside them.

public sealed class MyChannelFactory : IPooledChannelFactory<MyChannel>
{
    public async ValueTask<MyChannel> OpenAsync(CancellationToken ct) => await MyChannel.ConnectAsync(ct);
    public bool IsUsable(MyChannel channel) => !channel.IsFaulted;
    public ValueTask CloseAsync(MyChannel channel, CancellationToken ct) => channel.CloseAsync(ct);
    public void Abort(MyChannel channel) => channel.Abort();
}
