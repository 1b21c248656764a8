using System.Security.Cryptography;
using System.Text;
using System.Xml;
using Microsoft.AspNetCore.Http;

namespace ChannelPool.Testing.ServiceModel.SecureConversation;

/// <summary>
/// Test infrastructure, not product: the service side of <c>WSHttpBinding</c> with
/// <c>SecurityMode.TransportWithMessageCredential</c>, UserName credentials and <c>EstablishSecurityContext</c>, the
/// 2007 pool's scenario. It speaks SOAP 1.2 with WS-Addressing 1.0, WS-Trust and WS-SecureConversation of February 2005
/// and WS-Security 1.1, over the host's TLS:
/// <list type="bullet">
/// <item><b>Issue</b> (RST/SCT): authenticates the UsernameToken against <see cref="TestUsers"/>, combines the client's
/// and its own entropy into the session key with P_SHA-1, and returns the token, its references and its lifetime.</item>
/// <item><b>Use</b> (the echo contract): checks the timestamp, finds the session token behind the derived key that signed
/// the timestamp, derives that key and verifies the signature. Only then does it run the operation.</item>
/// <item><b>Cancel</b> (RST/SCT/Cancel, sent by a channel's close): verified the same way, then the token is forgotten.</item>
/// </list>
/// SoapCore cannot do this (it has no WS-Trust and never signs its own replies' timestamps), hence this small endpoint.
/// </summary>
/// <remarks>
/// A security session's calls are served as <see cref="SecureConversationOptions.Concurrency"/> says, the way WCF's
/// dispatcher serves them. WCF routes each message to its session's channel by the token that signed it
/// (<c>SecuritySessionServerSettings</c> keeps the active sessions by token identifier), and with
/// <see cref="ServiceConcurrency.Single"/> its pump takes a sessionful channel's next message only once the current
/// call's reply has been sent (<c>ConcurrencyBehavior.IsConcurrent</c>, <c>ChannelHandler</c>, <c>MessageRpc</c>), in
/// the order they arrived. Here HTTP requests arrive at once, so a session's turn stands in for that pump: the signing
/// token is found first, then the request waits its turn, and the turn is handed on after the reply is written. The
/// signature check, the operation and the signed reply are inside the turn, as they are inside WCF's pump.
/// </remarks>
internal sealed class SecureConversationEndpoint(SecurityContextStore store, SecureConversationOptions options, ServerCounters counters)
{
    public async Task HandleAsync(HttpContext context)
    {
        string? relatesTo = null;
        DateTimeOffset now = options.TimeProvider.GetUtcNow();
        SecurityContext? turn = null;
        string reply;
        try
        {
            try
            {
                ReceivedMessage message = await ReadAsync(context.Request, context.RequestAborted).ConfigureAwait(false);
                relatesTo = message.MessageId;
                if (message.Action == Soap.IssueAction)
                {
                    reply = Issue(message, now);
                }
                else
                {
                    (string identifier, XmlElement signature) = SignatureCheck.FindSigningToken(message);
                    turn = await TakeTurnAsync(identifier, context.RequestAborted).ConfigureAwait(false);
                    now = options.TimeProvider.GetUtcNow();
                    reply = message.Action == Soap.CancelAction
                        ? Cancel(message, identifier, signature, now)
                        : await DispatchAsync(message, identifier, signature, now, context.RequestAborted).ConfigureAwait(false);
                }

                // SOAP 1.2 over HTTP: a fault travels with status 500, the application's (Fail) as well as the security's.
                context.Response.StatusCode = IsFault(reply) ? StatusCodes.Status500InternalServerError : StatusCodes.Status200OK;
            }
            catch (SoapFaultException fault)
            {
                counters.SecurityFaultSent();
                reply = Soap.Fault(relatesTo, now, fault.Code, fault.SubcodeNamespace, fault.Subcode, fault.Message, secured: false);
                context.Response.StatusCode = StatusCodes.Status500InternalServerError;
            }
            catch (Exception e) when (e is XmlException or FormatException)
            {
                counters.SecurityFaultSent();
                reply = Soap.Fault(relatesTo, now, "Sender", null, null, e is XmlException ? $"The request is not well-formed XML: {e.Message}" : $"The request carries a malformed value: {e.Message}", secured: false);
                context.Response.StatusCode = StatusCodes.Status500InternalServerError;
            }

            context.Response.ContentType = "application/soap+xml; charset=utf-8";
            await context.Response.WriteAsync(reply, Encoding.UTF8).ConfigureAwait(false);
        }
        finally
        {
            turn?.Turn.Release();
        }
    }

    private static async Task<ReceivedMessage> ReadAsync(HttpRequest request, CancellationToken cancellationToken)
    {
        // Kestrel reads only asynchronously, XmlDocument only synchronously: buffer the request (small here) first.
        using var body = new MemoryStream();
        await request.Body.CopyToAsync(body, cancellationToken).ConfigureAwait(false);
        body.Position = 0;
        var document = new XmlDocument { PreserveWhitespace = true, XmlResolver = null };
        using (var reader = XmlReader.Create(body, new XmlReaderSettings { DtdProcessing = DtdProcessing.Prohibit, XmlResolver = null }))
        {
            // Whitespace preserved: the signature is over the timestamp exactly as the client wrote it.
            document.Load(reader);
        }

        return new ReceivedMessage(document);
    }

    /// <summary>
    /// Under <see cref="ServiceConcurrency.Single"/>, waits until the session's earlier requests have been answered; a
    /// token the service does not know has no turn to wait for (the check inside answers it with a fault).
    /// </summary>
    /// <returns>The session whose turn is now held, to hand on after the reply; <see langword="null"/> when none is held.</returns>
    private async Task<SecurityContext?> TakeTurnAsync(string identifier, CancellationToken cancellationToken)
    {
        if (options.Concurrency != ServiceConcurrency.Single || store.Find(identifier) is not { } session)
        {
            return null;
        }

        await session.Turn.WaitAsync(cancellationToken).ConfigureAwait(false);
        return session;
    }

    private static bool IsFault(string reply) => reply.Contains("<s:Fault>", StringComparison.Ordinal);

    private string Issue(ReceivedMessage message, DateTimeOffset now)
    {
        message.CheckTimestamp(now, options.MaxClockSkew);
        string userName = message.AuthenticateUserName();

        XmlElement request = message.BodyElement("RequestSecurityToken", Soap.Trust);
        string tokenType = message.Text(request, "t:TokenType") ?? "";
        string requestType = message.Text(request, "t:RequestType") ?? "";
        if (tokenType != Soap.TokenType || requestType != Soap.Trust + "/Issue")
        {
            throw new SoapFaultException($"Only the issue of a security context token is served here, not '{requestType}' of '{tokenType}'.");
        }

        string clientEntropyText = message.Text(request, "t:Entropy/t:BinarySecret")
            ?? throw new SoapFaultException("The request carries no client entropy; this service computes the key from both parties' entropy.");
        byte[] clientEntropy = Convert.FromBase64String(clientEntropyText);
        int keySize = int.TryParse(message.Text(request, "t:KeySize"), out int size) ? size : 256;
        if (keySize is < 128 or > 512 || keySize % 8 != 0)
        {
            throw new SoapFaultException($"The requested key size {keySize} is not served; ask for 128 to 512 bits.");
        }

        // WS-Trust's computed key (CK/PSHA1): P_SHA-1 with the requestor's entropy as the secret and the issuer's as the seed.
        byte[] serverEntropy = RandomNumberGenerator.GetBytes(keySize / 8);
        byte[] key = Psha1.Derive(clientEntropy, serverEntropy, 0, keySize / 8);
        SecurityContext issued = store.Issue(userName, key);
        counters.NegotiationCompleted();

        string tokenId = "uuid-" + Guid.NewGuid().ToString();
        string body = $"""
            <t:RequestSecurityTokenResponse xmlns:t="{Soap.Trust}"><t:TokenType>{Soap.TokenType}</t:TokenType><t:RequestedSecurityToken><c:SecurityContextToken u:Id="{tokenId}" xmlns:c="{Soap.SecureConversation}"><c:Identifier>{issued.Identifier}</c:Identifier></c:SecurityContextToken></t:RequestedSecurityToken><t:RequestedAttachedReference><o:SecurityTokenReference xmlns:o="{Soap.Security}"><o:Reference URI="#{tokenId}" ValueType="{Soap.TokenType}"/></o:SecurityTokenReference></t:RequestedAttachedReference><t:RequestedUnattachedReference><o:SecurityTokenReference xmlns:o="{Soap.Security}"><o:Reference URI="{issued.Identifier}" ValueType="{Soap.TokenType}"/></o:SecurityTokenReference></t:RequestedUnattachedReference><t:RequestedProofToken><t:ComputedKey>{Soap.Psha1ComputedKey}</t:ComputedKey></t:RequestedProofToken><t:Entropy><t:BinarySecret Type="{Soap.NonceType}">{Convert.ToBase64String(serverEntropy)}</t:BinarySecret></t:Entropy><t:Lifetime><u:Created>{Soap.Time(issued.Created)}</u:Created><u:Expires>{Soap.Time(issued.Expires)}</u:Expires></t:Lifetime><t:KeySize>{keySize}</t:KeySize></t:RequestSecurityTokenResponse>
            """;
        return Soap.Reply(Soap.IssueReplyAction, message.MessageId, now, body.Trim());
    }

    /// <summary>
    /// Checks a message on a security session before anything acts on it: a current timestamp, a token the service
    /// knows and still accepts, and a signature over the timestamp that verifies with that token's key.
    /// </summary>
    /// <returns>The session the message belongs to.</returns>
    private SecurityContext Authenticate(ReceivedMessage message, string identifier, XmlElement signature, DateTimeOffset now)
    {
        XmlElement timestamp = message.CheckTimestamp(now, options.MaxClockSkew);
        SecurityContext session = store.Use(identifier, out string? reason) ?? throw SoapFaultException.BadContextToken(reason!);
        SignatureCheck.Verify(message, signature, timestamp, session.Key);
        return session;
    }

    private string Cancel(ReceivedMessage message, string identifier, XmlElement signature, DateTimeOffset now)
    {
        SecurityContext session = Authenticate(message, identifier, signature, now);
        XmlElement request = message.BodyElement("RequestSecurityToken", Soap.Trust);
        if (message.Text(request, "t:RequestType") != Soap.Trust + "/Cancel")
        {
            throw new SoapFaultException("A cancel request must have the request type " + Soap.Trust + "/Cancel.");
        }

        // The token to cancel must be the one that signed the request: a session cancels only itself.
        XmlElement target = request.SelectSingleNode("t:CancelTarget/o:SecurityTokenReference/o:Reference", message.Names) as XmlElement
            ?? throw new SoapFaultException("The cancel request names no token to cancel.");
        string targetUri = target.GetAttribute("URI");
        if (targetUri != session.Identifier)
        {
            throw new SoapFaultException($"The cancel request names '{targetUri}', but was signed by '{session.Identifier}'; a session can only cancel itself.");
        }

        store.Cancel(session.Identifier);
        counters.TokenCancelled();
        return Soap.Reply(Soap.CancelReplyAction, message.MessageId, now, $"""<t:RequestSecurityTokenResponse xmlns:t="{Soap.Trust}"><t:RequestedTokenCancelled/></t:RequestSecurityTokenResponse>""");
    }

    /// <summary>Runs an operation of the echo contract (<see cref="IEchoService"/>), after the message's security checked out.</summary>
    private async Task<string> DispatchAsync(ReceivedMessage message, string identifier, XmlElement signature, DateTimeOffset now, CancellationToken cancellationToken)
    {
        SecurityContext session = Authenticate(message, identifier, signature, now);
        const string Operations = TestContract.Namespace + "/IEchoService/";
        string operation = message.Action.StartsWith(Operations, StringComparison.Ordinal) && message.Action[Operations.Length..] is "Echo" or "Fail" or "WhoAmI" or "EchoAfter"
            ? message.Action[Operations.Length..]
            : throw new SoapFaultException($"No operation of the echo contract has the action '{message.Action}'.", "Sender", Soap.Addressing, "ActionNotSupported");
        XmlElement call = message.BodyElement(operation, TestContract.Namespace);
        counters.CallDispatched();
        counters.SessionCallsInProgress(session.CallStarted());
        try
        {
            string argument = call.FirstChild?.InnerText ?? "";
            if (operation == "Fail")
            {
                return ApplicationFault(message, now, argument);
            }

            if (operation == "EchoAfter")
            {
                if (TestContract.ServiceTimeProblem(message.Text(call, "e:milliseconds"), out int serviceTime) is { } problem)
                {
                    return ApplicationFault(message, now, problem);
                }

                await Task.Delay(serviceTime, cancellationToken).ConfigureAwait(false);
                argument = message.Text(call, "e:text") ?? "";
            }

            string result = operation == "WhoAmI" ? session.UserName : argument;

            // A reply's timestamp is when it leaves, after the call's service time.
            return Soap.Reply(Operations + operation + "Response", message.MessageId, options.TimeProvider.GetUtcNow(), 
                $"""<{operation}Response xmlns="{TestContract.Namespace}"><{operation}Result>{Soap.Escape(result)}</{operation}Result></{operation}Response>""");
        }
        finally
        {
            session.CallEnded();
        }
    }

    // An application fault on a live session: secured like any reply, so the channel stays usable.
    private static string ApplicationFault(ReceivedMessage message, DateTimeOffset now, string reason) =>
        Soap.Fault(message.MessageId, now, "Sender", null, null, reason, secured: true);
}
