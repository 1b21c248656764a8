using System.Net;
using System.Text;
using System.Text.Json;
using ChannelPool.PollingDuplex;
using Polly;
using Polly.Retry;

namespace ChannelPool.PollingDuplex.Client;

/// <summary>Opens polling duplex sessions against one endpoint. Thread-safe; share one per endpoint.</summary>
public sealed class PollingDuplexClient
{
    private readonly HttpClient _http;
    private readonly Uri _sessionsUri;

    /// <summary>Creates a client for the endpoint at <paramref name="endpoint"/>.</summary>
    /// <param name="http">The HTTP client to send with; its <see cref="HttpClient.DefaultRequestVersion"/> applies (HTTP/2 works).</param>
    /// <param name="endpoint">The endpoint's base address, for example <c>https://host/duplex</c>.</param>
    /// <param name="options">Session settings; defaults when <see langword="null"/>.</param>
    /// <exception cref="ArgumentOutOfRangeException">An option is out of range; the message names it.</exception>
    public PollingDuplexClient(HttpClient http, Uri endpoint, PollingDuplexClientOptions? options = null)
    {
        ArgumentNullException.ThrowIfNull(http);
        ArgumentNullException.ThrowIfNull(endpoint);
        if (!endpoint.IsAbsoluteUri)
        {
            throw new ArgumentException($"The endpoint must be an absolute address; '{endpoint}' is not.", nameof(endpoint));
        }

        Options = options ?? new PollingDuplexClientOptions();
        Options.Validate();
        _http = http;
        Endpoint = new Uri(endpoint.AbsoluteUri.TrimEnd('/') + "/");
        _sessionsUri = new Uri(Endpoint, "sessions");
        Retry = new ResiliencePipelineBuilder()
            .AddRetry(new RetryStrategyOptions
            {
                MaxRetryAttempts = Math.Max(1, Options.MaxRetryAttempts),
                Delay = Options.RetryBaseDelay,
                MaxDelay = Options.RetryMaxDelay,
                BackoffType = DelayBackoffType.Exponential,
                UseJitter = true,
                ShouldHandle = args => ValueTask.FromResult(Options.MaxRetryAttempts > 0 && IsTransient(args.Outcome.Exception)),
                DelayGenerator = args => ValueTask.FromResult(RetryAfter(args.Outcome.Exception)),
            })
            .Build();
    }

    /// <summary>Gets the endpoint's base address.</summary>
    public Uri Endpoint { get; }

    /// <summary>Gets the session settings.</summary>
    public PollingDuplexClientOptions Options { get; }

    internal HttpClient Http => _http;

    internal ResiliencePipeline Retry { get; }

    /// <summary>
    /// Opens a session and starts its poll loop. An open whose answer is lost (a connection reset, a body cut short, a
    /// server error) is tried again like every other request, with the same <c>openId</c>, so the server answers the
    /// retry with the session the lost answer named rather than opening a second one.
    /// </summary>
    /// <param name="cancellationToken">Cancels the open.</param>
    /// <returns>The open session.</returns>
    /// <exception cref="PollingDuplexException">The server refused the session (for example <c>503 too-many-sessions</c>).</exception>
    public async Task<DuplexClientSession> OpenSessionAsync(CancellationToken cancellationToken = default)
    {
        // One per logical open, reused by its retries: 128 random bits, base64url.
        var openId = Convert.ToBase64String(System.Security.Cryptography.RandomNumberGenerator.GetBytes(16)).TrimEnd('=').Replace('+', '-').Replace('/', '_');
        var body = $"{{\"encoding\":\"{DuplexWire.NameOf(Options.Encoding)}\",\"mode\":\"{DuplexWire.NameOf(Options.Mode)}\",\"openId\":\"{openId}\"}}";
        var session = await Retry.ExecuteAsync(static async (state, ct) => await state.Client.OpenOnceAsync(state.Body, ct).ConfigureAwait(false), (Client: this, Body: body), cancellationToken).ConfigureAwait(false);
        session.Start();
        return session;
    }

    private async Task<DuplexClientSession> OpenOnceAsync(string body, CancellationToken cancellationToken)
    {
        using var request = CreateRequest(HttpMethod.Post, _sessionsUri);

        // application/json: the server requires it, so that a cross-site form can never open a session.
        request.Content = new StringContent(body, Encoding.UTF8, "application/json");
        using var timeout = CancellationTokenSource.CreateLinkedTokenSource(cancellationToken);
        timeout.CancelAfter(Options.RequestTimeout);
        using var response = await _http.SendAsync(request, timeout.Token).ConfigureAwait(false);
        if (response.StatusCode != HttpStatusCode.Created)
        {
            throw await ToExceptionAsync(response, "open a session", timeout.Token).ConfigureAwait(false);
        }

        JsonElement root;
        try
        {
            using var answer = await JsonDocument.ParseAsync(await response.Content.ReadAsStreamAsync(timeout.Token).ConfigureAwait(false), cancellationToken: timeout.Token).ConfigureAwait(false);
            root = answer.RootElement.Clone();
        }
        catch (JsonException ex)
        {
            // A body cut short by the network reads as bad JSON: the retry, with the same openId, gets the same answer.
            throw new TransientDuplexException(new PollingDuplexException($"The open's answer could not be read ({ex.Message}); it is asked for again.", ex));
        }

        if (!DuplexWire.TryParseEncoding(root.GetProperty("encoding").GetString(), out var encoding)
            || !DuplexWire.TryParseMode(root.GetProperty("mode").GetString(), out var mode))
        {
            throw new PollingDuplexException($"The server opened a session with an encoding or mode this client does not know: {root.GetRawText()}");
        }

        var session = new DuplexClientSession(
            this,
            root.GetProperty("sessionId").GetString()!,
            root.GetProperty("token").GetString()!,
            encoding,
            mode,
            TimeSpan.FromMilliseconds(root.GetProperty("serverPollTimeoutMs").GetInt64()),
            root.GetProperty("maxMessageSize").GetInt32());

        // A server without the limit takes any number of messages per send.
        session.MaxMessagesPerSend = root.TryGetProperty("maxMessagesPerSend", out var perSend) && perSend.TryGetInt32(out var most) && most > 0 ? most : int.MaxValue;
        return session;
    }

    internal HttpRequestMessage CreateRequest(HttpMethod method, Uri uri, string? token = null)
    {
        var request = new HttpRequestMessage(method, uri)
        {
            Version = _http.DefaultRequestVersion,
            VersionPolicy = _http.DefaultVersionPolicy,
        };
        if (token is not null)
        {
            // Its own header, so the HttpClient's Authorization (the application's sign-in) travels beside it untouched.
            request.Headers.TryAddWithoutValidation(DuplexWire.SessionTokenHeader, token);
        }

        return request;
    }

    /// <summary>Turns a refused response into an exception carrying the server's problem code and detail.</summary>
    internal static async Task<Exception> ToExceptionAsync(HttpResponseMessage response, string doing, CancellationToken cancellationToken)
    {
        var status = (int)response.StatusCode;
        string? code = null;
        string? detail = null;
        try
        {
            if (response.Content.Headers.ContentType?.MediaType == DuplexWire.ProblemContentType)
            {
                using var problem = await JsonDocument.ParseAsync(await response.Content.ReadAsStreamAsync(cancellationToken).ConfigureAwait(false), cancellationToken: cancellationToken).ConfigureAwait(false);
                code = problem.RootElement.TryGetProperty("code", out var c) ? c.GetString() : null;
                detail = problem.RootElement.TryGetProperty("detail", out var d) ? d.GetString() : null;
            }
        }
        catch (JsonException)
        {
            // Not the problem body the protocol promises; the status alone has to do.
        }

        var retryAfter = response.Headers.RetryAfter?.Delta;
        var exception = new PollingDuplexException(status, code, $"Could not {doing}: {status} {code ?? response.ReasonPhrase}. {detail}".TrimEnd(), retryAfter);

        // A rate limiter's 429 passes: the request is repeated after the wait the server asked for.
        return (status >= 500 && code != DuplexWire.Codes.TooManySessions && code != DuplexWire.Codes.TooManyPendingSessions) || status == 429
            ? new TransientDuplexException(exception)
            : exception;
    }

    /// <summary>The server's <c>Retry-After</c> for a retried 429 or 503, when it gave one and it is within the longest retry delay.</summary>
    private TimeSpan? RetryAfter(Exception? error) =>
        error is TransientDuplexException { InnerException: PollingDuplexException { RetryAfter: { } wait } } && wait <= Options.RetryMaxDelay ? wait : null;

    private static bool IsTransient(Exception? error) => error is HttpRequestException or IOException or TransientDuplexException
        || (error is OperationCanceledException && error.InnerException is TimeoutException);
}

/// <summary>A failure worth retrying: a server error or a connection that went away. Never escapes the client.</summary>
internal sealed class TransientDuplexException(Exception inner) : Exception(inner.Message, inner);
