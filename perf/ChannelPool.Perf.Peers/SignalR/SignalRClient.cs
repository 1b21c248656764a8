using System.Text.Json;
using ChannelPool.Perf.Clients;
using Microsoft.AspNetCore.SignalR.Client;

namespace ChannelPool.Perf.Peers.SignalR;

/// <summary>One simulated client: a <see cref="HubConnection"/> of the official client.</summary>
internal sealed class SignalRClient(HubConnection connection) : IPubSubClient
{
    /// <summary>Gets the connection's state; Disconnected once the connection ended or the client was disposed.</summary>
    public HubConnectionState State => connection.State;

    public Task SubscribeAsync(string topic, CancellationToken cancellationToken) =>
        connection.InvokeAsync(nameof(SignalRPubSubHub.Subscribe), topic, cancellationToken);

    public Task PublishAsync(string topic, ReadOnlyMemory<byte> data, CancellationToken cancellationToken)
    {
        // Parsing first makes a malformed value fail here, as an ArgumentException, rather than on the server.
        JsonElement value;
        try
        {
            value = JsonSerializer.Deserialize<JsonElement>(data.Span);
        }
        catch (JsonException exception)
        {
            throw new ArgumentException($"A publish carries one JSON value: {exception.Message}", nameof(data), exception);
        }

        return connection.InvokeAsync(nameof(SignalRPubSubHub.Publish), topic, value, cancellationToken);
    }

    public ValueTask DisposeAsync() => connection.DisposeAsync();
}
