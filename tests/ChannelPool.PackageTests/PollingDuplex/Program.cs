using ChannelPool;
using ChannelPool.PollingDuplex.Client;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Hosting;
using Microsoft.AspNetCore.Hosting.Server;
using Microsoft.AspNetCore.Hosting.Server.Features;
using Microsoft.AspNetCore.Http.Features;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Logging;

var builder = WebApplication.CreateSlimBuilder(args);
builder.WebHost.UseUrls("http://127.0.0.1:0");
builder.Logging.SetMinimumLevel(LogLevel.Warning);
builder.Services.AddPollingDuplexRedis(o => o.Configuration = "127.0.0.1:6379");
await using var app = builder.Build();
// Every client may use every topic: the explicit choice an app makes when it gives no topic rule.
app.MapPollingDuplexPubSub("/pubsub", o => o.Topics.AllowAnonymous = true);
await app.StartAsync();

var address = app.Services.GetRequiredService<IServer>().Features.GetRequiredFeature<IServerAddressesFeature>().Addresses.First();
using var http = new HttpClient();
var client = new PollingDuplexClient(http, new Uri(new Uri(address), "/pubsub"));

await using (var pool = new DefaultChannelPool<DuplexClientSession>(new PollingDuplexChannelFactory(client), new ChannelPoolOptions { Name = "pubsub", PoolSize = 1 }))
{
    await pool.WarmUpAsync(readyChannels: 1);
    await using var lease = await pool.AcquireAsync();
    Console.WriteLine($"polling duplex: opened pooled session {lease.Channel.Id} ({lease.Channel.State})");
}

await app.StopAsync();
