using System.Buffers;
using System.Text.Json;
using ChannelPool.PollingDuplex;
using ChannelPool.PollingDuplex.Client;

namespace ChannelPool.Perf.Clients;

/// <summary>Simulated clients of our pub/sub service, each a <see cref="DuplexClientSession"/>.</summary>
internal sealed class DuplexPubSubTransport : IPubSubTransport, ITransportDiagnostics
{
    private readonly PollingDuplexClient _client;
    private long _faults;
    private long _gaps;
    private string? _firstFault;

    public DuplexPubSubTransport(HttpClient http, Uri endpoint, DuplexEncoding encoding, PollingDuplexMode mode)
    {
        _client = new PollingDuplexClient(http, endpoint, new PollingDuplexClientOptions
        {
            Encoding = encoding,
            Mode = mode,

            // A load test must see a failure, not hide it behind minutes of retries.
            MaxRetryAttempts = 2,
        });
        Protocol = http.DefaultRequestVersion.Major >= 2 ? ClientProtocol.Http2 : ClientProtocol.Http11;
        Name = $"polling-duplex ({(mode == PollingDuplexMode.MultipleMessagesPerPoll ? "multiple" : "single")}, {(encoding == DuplexEncoding.Binary ? "binary" : "text")}" +
            (Protocol == ClientProtocol.Http2 ? ", HTTP/2)" : ")");
    }

    public string Name { get; }

    /// <summary>Gets the HTTP version the clients ask for: the <see cref="HttpClient.DefaultRequestVersion"/> they were given.</summary>
    public ClientProtocol Protocol { get; }

    public long Faults => Interlocked.Read(ref _faults);

    public long Gaps => Interlocked.Read(ref _gaps);

    public string? FirstFault => Volatile.Read(ref _firstFault);

    public async Task<IPubSubClient> ConnectAsync(NotificationHandler onNotification, CancellationToken cancellationToken)
    {
        var session = await _client.OpenSessionAsync(cancellationToken);
        return new Client(this, session, onNotification);
    }

    public ValueTask DisposeAsync() => ValueTask.CompletedTask;

    private void RecordFault(Exception error)
    {
        Interlocked.Increment(ref _faults);
        Interlocked.CompareExchange(ref _firstFault, error.Message, null);
    }

    /// <summary>Finds the <c>data</c> value in a notification <c>{"topic":…,"data":…}</c>.</summary>
    internal static bool TryGetData(ReadOnlySpan<byte> notification, out Range data)
    {
        data = default;
        var reader = new Utf8JsonReader(notification);
        if (!reader.Read() || reader.TokenType != JsonTokenType.StartObject)
        {
            return false;
        }

        while (reader.Read() && reader.TokenType == JsonTokenType.PropertyName)
        {
            var isData = reader.ValueTextEquals("data"u8);
            reader.Read();
            var start = (int)reader.TokenStartIndex;
            reader.Skip();
            if (isData)
            {
                data = start..(int)reader.BytesConsumed;
                return true;
            }
        }

        return false;
    }

    private sealed class Client : IPubSubClient
    {
        private readonly DuplexPubSubTransport _transport;
        private readonly DuplexClientSession _session;
        private readonly NotificationHandler _onNotification;
        private readonly CancellationTokenSource _stop = new();
        private readonly Task _reader;

        public Client(DuplexPubSubTransport transport, DuplexClientSession session, NotificationHandler onNotification)
        {
            _transport = transport;
            _session = session;
            _onNotification = onNotification;
            _reader = Task.Run(ReadAsync);
        }

        public Task SubscribeAsync(string topic, CancellationToken cancellationToken) =>
            _session.SendAsync(Command("subscribe", topic, default), cancellationToken).AsTask();

        public Task PublishAsync(string topic, ReadOnlyMemory<byte> data, CancellationToken cancellationToken) =>
            _session.SendAsync(Command("publish", topic, data.Span), cancellationToken).AsTask();

        public Task PublishAsync(string topic, IReadOnlyList<ReadOnlyMemory<byte>> batch, CancellationToken cancellationToken) =>
            _session.SendAsync([.. batch.Select(data => Command("publish", topic, data.Span))], cancellationToken).AsTask();

        public async ValueTask DisposeAsync()
        {
            await _stop.CancelAsync();
            await _session.DisposeAsync();
            await _reader;
            _stop.Dispose();
        }

        private static DuplexMessage Command(string op, string topic, ReadOnlySpan<byte> data)
        {
            var buffer = new ArrayBufferWriter<byte>(64 + topic.Length + data.Length);
            using (var json = new Utf8JsonWriter(buffer))
            {
                json.WriteStartObject();
                json.WriteString("op"u8, op);
                json.WriteString("topic"u8, topic);
                if (!data.IsEmpty)
                {
                    json.WritePropertyName("data"u8);
                    json.WriteRawValue(data, skipInputValidation: true);
                }

                json.WriteEndObject();
            }

            return DuplexMessage.FromJsonUtf8(buffer.WrittenMemory);
        }

        private async Task ReadAsync()
        {
            try
            {
                await foreach (var delivery in _session.ReadAllAsync(_stop.Token))
                {
                    if (delivery.IsGap)
                    {
                        Interlocked.Add(ref _transport._gaps, delivery.Missed);
                        continue;
                    }

                    var payload = delivery.Message!.Payload.Span;
                    if (TryGetData(payload, out var data))
                    {
                        _onNotification(payload[data]);
                    }
                }
            }
            catch (OperationCanceledException) when (_stop.IsCancellationRequested)
            {
            }
            catch (PollingDuplexException ex)
            {
                if (!_stop.IsCancellationRequested)
                {
                    _transport.RecordFault(ex);
                }
            }
        }
    }
}

/// <summary>What went wrong on a transport's clients, for the report.</summary>
internal interface ITransportDiagnostics
{
    /// <summary>Gets how many clients failed (their session or connection ended with an error).</summary>
    long Faults { get; }

    /// <summary>Gets the first failure's message.</summary>
    string? FirstFault { get; }
}
