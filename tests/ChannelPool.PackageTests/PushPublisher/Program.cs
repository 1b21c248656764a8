// Runs docs/polling-duplex.md's Prices publisher as the document says an app does (AddPollingDuplexPubSub, a hosted
// service), and receives one of its prices with the .NET client: the snippet compiles, starts and publishes.
using ChannelPool.PollingDuplex;
using ChannelPool.PollingDuplex.Client;
using Microsoft.AspNetCore.Hosting.Server;
using Microsoft.AspNetCore.Hosting.Server.Features;
using Microsoft.AspNetCore.Http.Features;

var builder = WebApplication.CreateSlimBuilder(args);
builder.WebHost.UseUrls("http://127.0.0.1:0");
builder.Logging.SetMinimumLevel(LogLevel.Warning);
builder.Services.AddPollingDuplexPubSub();
builder.Services.AddHostedService<Prices>();
await using var app = builder.Build();
app.MapPollingDuplexPubSub("/pubsub", o => o.Topics.AllowAnonymous = true);
await app.StartAsync();

var address = app.Services.GetRequiredService<IServer>().Features.GetRequiredFeature<IServerAddressesFeature>().Addresses.First();
using var http = new HttpClient();
using var timeout = new CancellationTokenSource(TimeSpan.FromSeconds(30));
var client = new PollingDuplexClient(http, new Uri(new Uri(address), "/pubsub"));
await using (var session = await client.OpenSessionAsync(timeout.Token))
{
    await session.SendAsync(DuplexMessage.FromJson(new { op = "subscribe", topic = "prices" }), timeout.Token);
    await foreach (var item in session.ReadAllAsync(timeout.Token))
    {
        if (!item.IsGap)
        {
            Console.WriteLine($"publisher: received {item.Message}");
            break;
        }
    }
}

await app.StopAsync();
