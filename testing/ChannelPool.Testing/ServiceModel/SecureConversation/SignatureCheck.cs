using System.Diagnostics.CodeAnalysis;
using System.Security.Cryptography;
using System.Security.Cryptography.Xml;
using System.Xml;

namespace ChannelPool.Testing.ServiceModel.SecureConversation;

/// <summary>
/// Verifies the signature a message on a security session carries: an XML signature (HMAC-SHA1, exclusive
/// canonicalization) over the message's timestamp, keyed with the session's key, the P_SHA-1 key computed at issue.
/// Over TLS this is the whole of the message-level check WS-SecureConversation asks for: the SCT is an endorsing
/// token, and what it endorses is the timestamp.
/// </summary>
/// <remarks>
/// <see cref="SignedXml"/> rather than hand-written exclusive canonicalization: it already implements exc-c14n,
/// reference digests and the HMAC check, and it comes with the WCF client's packages. Hand-written c14n is small for
/// one timestamp, but a bug in it would either reject every message or, worse, accept a message it did not really check.
/// The only thing <see cref="SignedXml"/> lacks is WS-Security's <c>wsu:Id</c>, added by <see cref="WsuSignedXml"/>.
/// </remarks>
internal static class SignatureCheck
{
    private const string HmacSha1 = "http://www.w3.org/2000/09/xmldsig#hmac-sha1";

    /// <summary>Finds the session token the message's signature names.</summary>
    /// <returns>The token's identifier, and the signature element.</returns>
    public static (string Identifier, XmlElement Signature) FindSigningToken(ReceivedMessage message)
    {
        var signatures = message.Security.SelectNodes("ds:Signature", message.Names)!;
        if (signatures.Count != 1)
        {
            throw SoapFaultException.InvalidSecurity($"The security header must carry exactly one signature; it carries {signatures.Count}.");
        }

        var signature = (XmlElement)signatures[0]!;
        XmlElement reference = signature.SelectSingleNode("ds:KeyInfo/o:SecurityTokenReference/o:Reference", message.Names) as XmlElement
            ?? throw SoapFaultException.InvalidSecurity("The signature's key info does not reference a security token.");
        string uri = reference.GetAttribute("URI");
        if (!uri.StartsWith('#'))
        {
            // An unattached reference: the URI is the token's identifier.
            return (uri, signature);
        }

        XmlElement token = FindById(message, uri[1..])
            ?? throw SoapFaultException.InvalidSecurity($"The signature's key names the token '{uri}', which the message does not carry.");
        if (token.LocalName != "SecurityContextToken" || token.NamespaceURI != Soap.SecureConversation || token.ParentNode != message.Security)
        {
            throw SoapFaultException.InvalidSecurity($"The signature's key must be a security context token in the security header, not {token.LocalName}.");
        }

        string identifier = message.Text(token, "c:Identifier")
            ?? throw SoapFaultException.InvalidSecurity("The security context token has no identifier.");
        return (identifier, signature);
    }

    /// <summary>Verifies that <paramref name="signature"/> covers <paramref name="timestamp"/> and was made with <paramref name="key"/>.</summary>
    [SuppressMessage("Security", "CA5350:Do Not Use Weak Cryptographic Algorithms", Justification = "HMAC-SHA1 is what the client signs with under this binding's Basic256 algorithm suite.")]
    public static void Verify(ReceivedMessage message, XmlElement signature, XmlElement timestamp, byte[] key)
    {
        string timestampId = timestamp.GetAttribute("Id", Soap.Utility);
        var signedXml = new WsuSignedXml(message.Document);
        try
        {
            signedXml.LoadXml(signature);
        }
        catch (CryptographicException e)
        {
            throw SoapFaultException.InvalidSecurity($"The signature cannot be read: {e.Message}");
        }

        if (signedXml.SignatureMethod != HmacSha1)
        {
            throw SoapFaultException.InvalidSecurity($"The signature method '{signedXml.SignatureMethod}' is not served; a session token signs with HMAC-SHA1.");
        }

        if (timestampId.Length == 0 || !signedXml.SignedInfo!.References.OfType<Reference>().Any(r => r.Uri == "#" + timestampId))
        {
            throw SoapFaultException.InvalidSecurity("The signature does not cover the message's timestamp.");
        }

        bool valid;
        using (var hmac = new HMACSHA1(key))
        {
            try
            {
                valid = signedXml.CheckSignature(hmac);
            }
            catch (CryptographicException e)
            {
                throw SoapFaultException.FailedCheck($"The signature cannot be verified: {e.Message}");
            }
        }

        if (!valid)
        {
            throw SoapFaultException.FailedCheck("The signature does not verify with the security context token's key: the signed content or the signature value was changed, or another key signed it.");
        }
    }

    private static XmlElement? FindById(ReceivedMessage message, string id)
    {
        var matches = message.Document.SelectNodes($"//*[@u:Id='{id.Replace("'", "", StringComparison.Ordinal)}']", message.Names)!;
        return matches.Count switch
        {
            0 => null,
            1 => (XmlElement)matches[0]!,
            _ => throw SoapFaultException.InvalidSecurity($"Several elements carry the id '{id}'."),
        };
    }
}

/// <summary><see cref="SignedXml"/> that also resolves references by WS-Security's <c>wsu:Id</c>, and refuses duplicate ids.</summary>
public sealed class WsuSignedXml(XmlDocument document) : SignedXml(document)
{
    /// <inheritdoc />
    public override XmlElement? GetIdElement(XmlDocument? document, string idValue)
    {
        if (document is null)
        {
            return null;
        }

        var names = Soap.Names(document.NameTable);
        var matches = document.SelectNodes($"//*[@u:Id='{idValue.Replace("'", "", StringComparison.Ordinal)}' or @Id='{idValue.Replace("'", "", StringComparison.Ordinal)}']", names)!;
        return matches.Count == 1 ? (XmlElement)matches[0]! : null;
    }
}
