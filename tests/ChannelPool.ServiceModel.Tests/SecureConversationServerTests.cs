using System.Net;
using System.Security.Cryptography;
using System.Security.Cryptography.X509Certificates;
using System.Security.Cryptography.Xml;
using System.Text;
using System.Xml;
using ChannelPool.Testing;
using ChannelPool.Testing.ServiceModel;
using ChannelPool.Testing.ServiceModel.SecureConversation;
using ChannelPool.Testing.ServiceModel.Soap;
using Microsoft.Extensions.Time.Testing;
using Wire = ChannelPool.Testing.ServiceModel.SecureConversation.Soap;

namespace ChannelPool.ServiceModel.Tests;

/// <summary>
/// The test server's WS-SecureConversation endpoint refuses what it did not check. Each test sends hand-made messages
/// over HTTPS; the first one shows that a correctly made message is accepted, so each refusal below is for the one
/// thing that test changed.
/// </summary>
[TestFixture]
[NonParallelizable]
public sealed class SecureConversationServerTests
{
    private const string Sc = "http://schemas.xmlsoap.org/ws/2005/02/sc";
    private const string Wsse = "http://docs.oasis-open.org/wss/2004/01/oasis-200401-wss-wssecurity-secext-1.0.xsd";

    private X509Certificate2 _certificate = null!;
    private FakeTimeProvider _time = null!;
    private SoapTestHost _host = null!;
    private HttpClient _http = null!;

    [SetUp]
    public async Task SetUp()
    {
        _certificate = TestCertificate.Create();
        _time = new FakeTimeProvider(DateTimeOffset.UtcNow);
        _host = await SoapTestHost.StartAsync(_certificate, secureConversation: new SecureConversationOptions
        {
            TokenLifetime = TimeSpan.FromMinutes(10),
            InactivityTimeout = TimeSpan.FromMinutes(2),
            TimeProvider = _time,
        });
#pragma warning disable CA2000 // The client owns the handler and disposes of it.
        var handler = new HttpClientHandler
        {
            ServerCertificateCustomValidationCallback = (_, certificate, _, _) => certificate?.Thumbprint == _certificate.Thumbprint,
        };
#pragma warning restore CA2000
        _http = new HttpClient(handler);
    }

    [TearDown]
    public async Task TearDown()
    {
        _http.Dispose();
        await _host.DisposeAsync();
        _certificate.Dispose();
    }

    [Test]
    public async Task AMessageSignedWithTheNegotiatedKey_IsAccepted()
    {
        var session = await IssueAsync(TestUsers.Alice, TestUsers.AlicePassword);

        var reply = await PostAsync(Call(session, "Echo", "hello"));

        Assert.That(reply.Status, Is.EqualTo(HttpStatusCode.OK), reply.Body);
        Assert.That(reply.Body, Does.Contain("<EchoResult>hello</EchoResult>"));
        Assert.That(_host.Counters.Calls, Is.EqualTo(1));
    }

    [Test]
    public async Task AWrongPassword_GetsNoToken()
    {
        var reply = await PostAsync(IssueRequest(TestUsers.Alice, "wrong", new byte[32]));

        AssertRefused(reply, "FailedAuthentication", "password is wrong for");
        Assert.That(_host.Counters.Negotiations, Is.Zero);
    }

    [Test]
    public async Task AnUnsignedMessage_IsRefused()
    {
        var session = await IssueAsync(TestUsers.Alice, TestUsers.AlicePassword);

        var reply = await PostAsync(Call(session, "Echo", "hello", sign: false));

        AssertRefused(reply, "InvalidSecurity", "exactly one signature");
    }

    [Test]
    public async Task AMessageWithoutATimestamp_IsRefused()
    {
        var session = await IssueAsync(TestUsers.Alice, TestUsers.AlicePassword);
        var message = Call(session, "Echo", "hello");
        var timestamp = message.GetElementsByTagName("Timestamp", Wire.Utility)[0]!;
        timestamp.ParentNode!.RemoveChild(timestamp);

        var reply = await PostAsync(message);

        AssertRefused(reply, "InvalidSecurity", "exactly one timestamp");
    }

    [Test]
    public async Task AChangedSignatureValue_IsRefused()
    {
        var session = await IssueAsync(TestUsers.Alice, TestUsers.AlicePassword);
        var message = Call(session, "Echo", "hello");
        var value = message.GetElementsByTagName("SignatureValue", SignedXml.XmlDsigNamespaceUrl)[0]!;
        var bytes = Convert.FromBase64String(value.InnerText);
        bytes[0] ^= 0x01;
        value.InnerText = Convert.ToBase64String(bytes);

        var reply = await PostAsync(message);

        AssertRefused(reply, "FailedCheck", "does not verify");
    }

    [Test]
    public async Task ATimestampChangedAfterSigning_IsRefused()
    {
        var session = await IssueAsync(TestUsers.Alice, TestUsers.AlicePassword);
        var message = Call(session, "Echo", "hello");
        var expires = message.GetElementsByTagName("Expires", Wire.Utility)[0]!;
        expires.InnerText = Wire.Time(_time.GetUtcNow().AddHours(1));

        var reply = await PostAsync(message);

        AssertRefused(reply, "FailedCheck", "does not verify");
    }

    [Test]
    public async Task AMessageSignedWithAnotherKey_IsRefused()
    {
        var session = await IssueAsync(TestUsers.Alice, TestUsers.AlicePassword);

        var reply = await PostAsync(Call(session with { Key = RandomNumberGenerator.GetBytes(32) }, "Echo", "hello"));

        AssertRefused(reply, "FailedCheck", "does not verify");
    }

    [Test]
    public async Task ASignatureThatDoesNotCoverTheTimestamp_IsRefused()
    {
        var session = await IssueAsync(TestUsers.Alice, TestUsers.AlicePassword);

        var reply = await PostAsync(Call(session, "Echo", "hello", signBodyInstead: true));

        AssertRefused(reply, "InvalidSecurity", "does not cover the message");
    }

    [Test]
    public async Task AnUnknownToken_GetsBadContextToken()
    {
        var session = await IssueAsync(TestUsers.Alice, TestUsers.AlicePassword);

        var reply = await PostAsync(Call(session with { Identifier = "urn:uuid:" + Guid.NewGuid() }, "Echo", "hello"));

        AssertRefused(reply, "BadContextToken", "unknown or was cancelled");
    }

    [Test]
    public async Task AnExpiredToken_GetsBadContextToken()
    {
        var session = await IssueAsync(TestUsers.Alice, TestUsers.AlicePassword);
        for (var i = 0; i < 11; i++)
        {
            // Keep the token in use (under the inactivity timeout) until its 10-minute lifetime is over.
            _time.Advance(TimeSpan.FromMinutes(1));
            if (i < 9)
            {
                Assert.That((await PostAsync(Call(session, "Echo", "still valid"))).Status, Is.EqualTo(HttpStatusCode.OK));
            }
        }

        var reply = await PostAsync(Call(session, "Echo", "hello"));

        AssertRefused(reply, "BadContextToken", "expired");
    }

    [Test]
    public async Task ATokenIdlePastTheInactivityTimeout_GetsBadContextToken()
    {
        var session = await IssueAsync(TestUsers.Alice, TestUsers.AlicePassword);
        _time.Advance(TimeSpan.FromMinutes(2));

        var reply = await PostAsync(Call(session, "Echo", "hello"));

        AssertRefused(reply, "BadContextToken", "inactivity timeout");
        Assert.That(_host.SecurityContextTokens, Is.Zero, "the idle token was forgotten");
    }

    [Test]
    public async Task ACancelledToken_GetsBadContextToken()
    {
        var session = await IssueAsync(TestUsers.Alice, TestUsers.AlicePassword);
        var cancelled = await PostAsync(Cancel(session, session.Identifier));
        Assert.That(cancelled.Status, Is.EqualTo(HttpStatusCode.OK), cancelled.Body);
        Assert.That(cancelled.Body, Does.Contain("RequestedTokenCancelled"));

        var reply = await PostAsync(Call(session, "Echo", "hello"));

        AssertRefused(reply, "BadContextToken", "unknown or was cancelled");
    }

    [Test]
    public async Task ASession_CannotCancelAnotherSessionsToken()
    {
        var alice = await IssueAsync(TestUsers.Alice, TestUsers.AlicePassword);
        var bob = await IssueAsync(TestUsers.Bob, TestUsers.BobPassword);

        var reply = await PostAsync(Cancel(alice, bob.Identifier));

        AssertRefused(reply, null, "can only cancel itself");
        Assert.That((await PostAsync(Call(bob, "WhoAmI", null))).Body, Does.Contain("<WhoAmIResult>bob</WhoAmIResult>"));
    }

    [Test]
    public async Task AnExpiredTimestamp_IsRefused()
    {
        var session = await IssueAsync(TestUsers.Alice, TestUsers.AlicePassword);

        var reply = await PostAsync(Call(session, "Echo", "hello", created: _time.GetUtcNow().AddMinutes(-20)));

        AssertRefused(reply, "MessageExpired", "expired at");
    }

    [Test]
    public async Task ARequestThatIsNotXml_IsRefused()
    {
        using var content = new StringContent("this is not a SOAP envelope", Encoding.UTF8, "application/soap+xml");
        using var response = await _http.PostAsync(_host.SecureConversationAddress, content);

        Assert.That(response.StatusCode, Is.EqualTo(HttpStatusCode.InternalServerError));
        Assert.That(await response.Content.ReadAsStringAsync(), Does.Contain("not well-formed XML"));
    }

    private static void AssertRefused((HttpStatusCode Status, string Body) reply, string? subcode, string reason)
    {
        Assert.That(reply.Status, Is.EqualTo(HttpStatusCode.InternalServerError), reply.Body);
        Assert.That(reply.Body, Does.Contain("<s:Fault>").And.Contain(reason));
        if (subcode is not null)
        {
            Assert.That(reply.Body, Does.Contain(":" + subcode + "</s:Value>"));
        }

        Assert.That(reply.Body, Does.Not.Contain("Result>"), "no operation answered");
    }

    private async Task<Session> IssueAsync(string user, string password)
    {
        byte[] clientEntropy = RandomNumberGenerator.GetBytes(32);
        var reply = await PostAsync(IssueRequest(user, password, clientEntropy));
        Assert.That(reply.Status, Is.EqualTo(HttpStatusCode.OK), reply.Body);

        var document = new XmlDocument();
        document.LoadXml(reply.Body);
        var names = Wire.Names(document.NameTable);
        string identifier = document.SelectSingleNode("//c:SecurityContextToken/c:Identifier", names)!.InnerText;
        byte[] serverEntropy = Convert.FromBase64String(document.SelectSingleNode("//t:Entropy/t:BinarySecret", names)!.InnerText);
        return new Session(identifier, Psha1.Derive(clientEntropy, serverEntropy, 0, 32));
    }

    private XmlDocument IssueRequest(string user, string password, byte[] clientEntropy) => Envelope(
        Wire.IssueAction,
        $"""<o:UsernameToken><o:Username>{user}</o:Username><o:Password Type="{Wire.PasswordText}">{password}</o:Password></o:UsernameToken>""",
        $"""<t:RequestSecurityToken xmlns:t="http://schemas.xmlsoap.org/ws/2005/02/trust"><t:TokenType>{Sc}/sct</t:TokenType><t:RequestType>http://schemas.xmlsoap.org/ws/2005/02/trust/Issue</t:RequestType><t:Entropy><t:BinarySecret Type="http://schemas.xmlsoap.org/ws/2005/02/trust/Nonce">{Convert.ToBase64String(clientEntropy)}</t:BinarySecret></t:Entropy><t:KeySize>256</t:KeySize></t:RequestSecurityToken>""",
        created: null);

    private XmlDocument Call(Session session, string operation, string? argument, bool sign = true, bool signBodyInstead = false, DateTimeOffset? created = null)
    {
        string parameter = operation == "Fail" ? "reason" : "text";
        string body = argument is null
            ? $"""<{operation} xmlns="{TestContract.Namespace}" u:Id="body"/>"""
            : $"""<{operation} xmlns="{TestContract.Namespace}" u:Id="body"><{parameter}>{argument}</{parameter}></{operation}>""";
        var message = Envelope($"{TestContract.Namespace}/IEchoService/{operation}", Token(session), body, created ?? _time.GetUtcNow());
        if (sign)
        {
            Sign(message, session, signBodyInstead ? "#body" : "#_0");
        }

        return message;
    }

    private XmlDocument Cancel(Session session, string target)
    {
        var message = Envelope(
            Wire.CancelAction,
            Token(session),
            $"""<t:RequestSecurityToken xmlns:t="http://schemas.xmlsoap.org/ws/2005/02/trust"><t:RequestType>http://schemas.xmlsoap.org/ws/2005/02/trust/Cancel</t:RequestType><t:CancelTarget><o:SecurityTokenReference xmlns:o="{Wsse}"><o:Reference URI="{target}" ValueType="{Sc}/sct"/></o:SecurityTokenReference></t:CancelTarget></t:RequestSecurityToken>""",
            _time.GetUtcNow());
        Sign(message, session, "#_0");
        return message;
    }

    private static string Token(Session session) =>
        $"""<c:SecurityContextToken u:Id="sct" xmlns:c="{Sc}"><c:Identifier>{session.Identifier}</c:Identifier></c:SecurityContextToken>""";

    /// <summary>A SOAP 1.2 envelope shaped like the WCF client's: addressing headers, then the security header.</summary>
    private XmlDocument Envelope(string action, string securityTokens, string body, DateTimeOffset? created)
    {
        DateTimeOffset time = created ?? _time.GetUtcNow();
        string xml = $"""<s:Envelope xmlns:s="http://www.w3.org/2003/05/soap-envelope" xmlns:a="http://www.w3.org/2005/08/addressing" xmlns:u="{Wire.Utility}"><s:Header><a:Action s:mustUnderstand="1">{action}</a:Action><a:MessageID>urn:uuid:{Guid.NewGuid()}</a:MessageID><a:To s:mustUnderstand="1">{_host.SecureConversationAddress}</a:To><o:Security s:mustUnderstand="1" xmlns:o="{Wsse}"><u:Timestamp u:Id="_0"><u:Created>{Wire.Time(time)}</u:Created><u:Expires>{Wire.Time(time.AddMinutes(5))}</u:Expires></u:Timestamp>{securityTokens}</o:Security></s:Header><s:Body>{body}</s:Body></s:Envelope>""";
        var document = new XmlDocument { PreserveWhitespace = true };
        document.LoadXml(xml);
        return document;
    }

    /// <summary>Signs as the WCF client does: HMAC-SHA1 with the session key, exclusive c14n, key info naming the token.</summary>
    private static void Sign(XmlDocument message, Session session, string reference)
    {
        var signedXml = new WsuSignedXml(message);
        signedXml.SignedInfo!.CanonicalizationMethod = SignedXml.XmlDsigExcC14NTransformUrl;
        var signedReference = new Reference(reference) { DigestMethod = SignedXml.XmlDsigSHA1Url };
        signedReference.AddTransform(new XmlDsigExcC14NTransform());
        signedXml.AddReference(signedReference);
#pragma warning disable CA5350 // The protocol's algorithm, as the client uses it.
        using (var hmac = new HMACSHA1(session.Key))
        {
            signedXml.ComputeSignature(hmac);
        }
#pragma warning restore CA5350

        XmlElement signature = signedXml.GetXml();
        XmlElement keyInfo = message.CreateElement("KeyInfo", SignedXml.XmlDsigNamespaceUrl);
        XmlElement tokenReference = message.CreateElement("o", "SecurityTokenReference", Wsse);
        XmlElement tokenUri = message.CreateElement("o", "Reference", Wsse);
        tokenUri.SetAttribute("URI", "#sct");
        tokenUri.SetAttribute("ValueType", Sc + "/sct");
        tokenReference.AppendChild(tokenUri);
        keyInfo.AppendChild(tokenReference);
        signature.AppendChild(message.ImportNode(keyInfo, deep: true));
        message.GetElementsByTagName("Security", Wsse)[0]!.AppendChild(message.ImportNode(signature, deep: true));
    }

    private async Task<(HttpStatusCode Status, string Body)> PostAsync(XmlDocument message)
    {
        using var content = new StringContent(message.OuterXml, Encoding.UTF8, "application/soap+xml");
        using var response = await _http.PostAsync(_host.SecureConversationAddress, content);
        return (response.StatusCode, await response.Content.ReadAsStringAsync());
    }

    private sealed record Session(string Identifier, byte[] Key);
}
