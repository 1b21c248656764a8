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
internal sealed class SecureConversationEndpoint(SecurityContextStore store, SecureConversationOptions options, ServerCounters counters)
{
    public async Task HandleAsync(HttpContext context)
    {
        var document = new XmlDocument { PreserveWhitespace = true, XmlResolver = null };
        string? relatesTo = null;
        DateTimeOffset now = options.TimeProvider.GetUtcNow();
        string reply;
        try
        {
            // Kestrel reads only asynchronously, XmlDocument only synchronously: buffer the request (small here) first.
            using var body = new MemoryStream();
            await context.Request.Body.CopyToAsync(body, context.RequestAborted).ConfigureAwait(false);
            body.Position = 0;
            using (var reader = XmlReader.Create(body, new XmlReaderSettings { DtdProcessing = DtdProcessing.Prohibit, XmlResolver = null }))
            {
                // Whitespace preserved: the signature is over the timestamp exactly as the client wrote it.
                document.Load(reader);
            }

            var message = new ReceivedMessage(document);
            relatesTo = message.MessageId;
            reply = message.Action switch
            {
                Soap.IssueAction => Issue(message, now),
                Soap.CancelAction => Cancel(message, now),
                _ => Dispatch(message, now),
            };

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
    private SecurityContext Authenticate(ReceivedMessage message, DateTimeOffset now)
    {
        XmlElement timestamp = message.CheckTimestamp(now, options.MaxClockSkew);
        (string identifier, XmlElement signature) = SignatureCheck.FindSigningToken(message);
        SecurityContext session = store.Use(identifier, out string? reason) ?? throw SoapFaultException.BadContextToken(reason!);
        SignatureCheck.Verify(message, signature, timestamp, session.Key);
        return session;
    }

    private string Cancel(ReceivedMessage message, DateTimeOffset now)
    {
        SecurityContext session = Authenticate(message, now);
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
    private string Dispatch(ReceivedMessage message, DateTimeOffset now)
    {
        SecurityContext session = Authenticate(message, now);
        const string Operations = TestContract.Namespace + "/IEchoService/";
        string operation = message.Action.StartsWith(Operations, StringComparison.Ordinal) && message.Action[Operations.Length..] is "Echo" or "Fail" or "WhoAmI"
            ? message.Action[Operations.Length..]
            : throw new SoapFaultException($"No operation of the echo contract has the action '{message.Action}'.", "Sender", Soap.Addressing, "ActionNotSupported");
        XmlElement call = message.BodyElement(operation, TestContract.Namespace);
        counters.CallDispatched();
        string argument = call.FirstChild?.InnerText ?? "";
        if (operation == "Fail")
        {
            // An application fault on a live session: secured like any reply, so the channel stays usable.
            return Soap.Fault(message.MessageId, now, "Sender", null, null, argument, secured: true);
        }

        string result = operation switch
        {
            "Echo" => argument,
            _ => session.UserName,
        };
        return Soap.Reply(Operations + operation + "Response", message.MessageId, now,
            $"""<{operation}Response xmlns="{TestContract.Namespace}"><{operation}Result>{Soap.Escape(result)}</{operation}Result></{operation}Response>""");
    }
}
