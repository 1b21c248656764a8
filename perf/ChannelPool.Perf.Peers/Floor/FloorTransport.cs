using System.Buffers.Binary;
using System.Globalization;
using System.Net;
using ChannelPool.PollingDuplex;

namespace ChannelPool.Perf.Peers.Floor;

/// <summary>
/// Clients of the bare long-poll endpoint (<see cref="Servers.FloorEndpoint"/>): each loops a GET, reads the body into a
/// buffer it keeps, and hands each frame's notification data to the scenario, as our transport does. Nothing else: no
/// session, token, retries or ordering. A batch of k publishes asks the endpoint for one body of k frames of the first.
/// </summary>
internal sealed class FloorTransport : IPubSubTransport
{
    private readonly HttpClient _http;
    private readonly string _publish;
    private readonly string _poll;

    /// <summary>Initializes a new instance of the <see cref="FloorTransport"/> class.</summary>
    /// <param name="http">The client every request goes through; its default version says HTTP/1.1 or HTTP/2.</param>
    /// <param name="endpoint">The floor's base address, for example <c>http://127.0.0.1:5000/floor</c>.</param>
    /// <param name="name">The transport's name in the report.</param>
    /// <param name="protocol">The HTTP version <paramref name="http"/> asks for.</param>
    public FloorTransport(HttpClient http, Uri endpoint, string name, ClientProtocol protocol = ClientProtocol.Http11)
    {
        _http = http;
        Name = name;
        Protocol = protocol;
        _publish = $"{endpoint}/publish?topic=";
        _poll = $"{endpoint}/poll?topic=";
    }

    public string Name { get; }

    public ClientProtocol Protocol { get; }

    public Task<IPubSubClient> ConnectAsync(NotificationHandler onNotification, CancellationToken cancellationToken) =>
        Task.FromResult<IPubSubClient>(new Client(this, onNotification));

    public ValueTask DisposeAsync() => ValueTask.CompletedTask;

    private sealed class Client(FloorTransport transport, NotificationHandler onNotification) : IPubSubClient
    {
        private readonly CancellationTokenSource _stop = new();
        private byte[] _buffer = new byte[4096];
        private Task _loop = Task.CompletedTask;
        private string _poll = string.Empty;

        /// <summary>Starts polling from the topic's beginning: a body published before the first poll arrives is still this client's.</summary>
        public Task SubscribeAsync(string topic, CancellationToken cancellationToken)
        {
            _poll = $"{transport._poll}{Uri.EscapeDataString(topic)}&after=";
            _loop = Task.Run(() => PollAsync(0, _stop.Token), CancellationToken.None);
            return Task.CompletedTask;
        }

        public Task PublishAsync(string topic, ReadOnlyMemory<byte> data, CancellationToken cancellationToken) => PublishAsync(topic, data, 1, cancellationToken);

        public Task PublishAsync(string topic, IReadOnlyList<ReadOnlyMemory<byte>> batch, CancellationToken cancellationToken) =>
            PublishAsync(topic, batch[0], batch.Count, cancellationToken);

        private async Task PublishAsync(string topic, ReadOnlyMemory<byte> data, int frames, CancellationToken cancellationToken)
        {
            using var content = new ReadOnlyMemoryContent(data);
            var uri = new Uri($"{transport._publish}{Uri.EscapeDataString(topic)}&frames={frames.ToString(CultureInfo.InvariantCulture)}");
            using var response = await transport._http.PostAsync(uri, content, cancellationToken);
            response.EnsureSuccessStatusCode();
        }

        public async ValueTask DisposeAsync()
        {
            await _stop.CancelAsync();
            await _loop.ConfigureAwait(ConfigureAwaitOptions.SuppressThrowing);
            _stop.Dispose();
        }

        private async Task PollAsync(long after, CancellationToken cancellationToken)
        {
            while (!cancellationToken.IsCancellationRequested)
            {
                try
                {
                    using var response = await transport._http.GetAsync(new Uri(_poll + after.ToString(CultureInfo.InvariantCulture)), HttpCompletionOption.ResponseHeadersRead, cancellationToken);
                    if (response.StatusCode != HttpStatusCode.OK)
                    {
                        continue;
                    }

                    await using var stream = await response.Content.ReadAsStreamAsync(cancellationToken);
                    var length = 0;
                    int read;
                    while ((read = await stream.ReadAsync(_buffer.AsMemory(length), cancellationToken)) > 0)
                    {
                        length += read;
                        if (length == _buffer.Length)
                        {
                            Array.Resize(ref _buffer, _buffer.Length * 2);
                        }
                    }

                    after = Read(_buffer.AsSpan(0, length));
                }
                catch (OperationCanceledException) when (cancellationToken.IsCancellationRequested)
                {
                    return;
                }
            }
        }

        /// <summary>Hands each binary frame's notification data on; returns the last frame's number.</summary>
        private long Read(ReadOnlySpan<byte> body)
        {
            long last = 0;
            while (body.Length >= DuplexWire.BinaryHeaderSize)
            {
                last = BinaryPrimitives.ReadInt64BigEndian(body[1..]);
                var length = (int)BinaryPrimitives.ReadUInt32BigEndian(body[9..]);
                var payload = body.Slice(DuplexWire.BinaryHeaderSize, length);
                if (DuplexPubSubTransport.TryGetData(payload, out var data))
                {
                    onNotification(payload[data]);
                }

                body = body[(DuplexWire.BinaryHeaderSize + length)..];
            }

            return last;
        }
    }
}
