using System.Globalization;
using System.Security;
using System.Xml;

namespace ChannelPool.Testing.ServiceModel.SecureConversation;

/// <summary>
/// The XML names this binding's messages use, and the envelopes the service answers with. Public so the server's
/// bad-input tests build their requests with the same names.
/// </summary>
public static class Soap
{
    // The namespaces: SOAP 1.2, WS-Addressing 1.0, WS-Security 1.1, WS-Trust and WS-SecureConversation of February 2005.
    public const string Envelope = "http://www.w3.org/2003/05/soap-envelope";
    public const string Addressing = "http://www.w3.org/2005/08/addressing";
    public const string Utility = "http://docs.oasis-open.org/wss/2004/01/oasis-200401-wss-wssecurity-utility-1.0.xsd";
    public const string Security = "http://docs.oasis-open.org/wss/2004/01/oasis-200401-wss-wssecurity-secext-1.0.xsd";
    public const string Trust = "http://schemas.xmlsoap.org/ws/2005/02/trust";
    public const string SecureConversation = "http://schemas.xmlsoap.org/ws/2005/02/sc";
    public const string DigitalSignature = "http://www.w3.org/2000/09/xmldsig#";

    // The actions and URIs the service reads and writes.
    public const string IssueAction = Trust + "/RST/SCT";
    public const string IssueReplyAction = Trust + "/RSTR/SCT";
    public const string CancelAction = Trust + "/RST/SCT/Cancel";
    public const string CancelReplyAction = Trust + "/RSTR/SCT/Cancel";
    public const string FaultAction = Addressing + "/fault";
    public const string TokenType = SecureConversation + "/sct";
    public const string PasswordText = "http://docs.oasis-open.org/wss/2004/01/oasis-200401-wss-username-token-profile-1.0#PasswordText";
    public const string NonceType = Trust + "/Nonce";
    public const string Psha1ComputedKey = Trust + "/CK/PSHA1";

    /// <summary>WS-SecureConversation's default derivation label when a derived key token names none.</summary>
    public const string DefaultLabel = "WS-SecureConversationWS-SecureConversation";

    /// <summary>A namespace manager with the prefixes the XPath queries in this folder use.</summary>
    public static XmlNamespaceManager Names(XmlNameTable nameTable)
    {
        var names = new XmlNamespaceManager(nameTable);
        names.AddNamespace("s", Envelope);
        names.AddNamespace("a", Addressing);
        names.AddNamespace("u", Utility);
        names.AddNamespace("o", Security);
        names.AddNamespace("t", Trust);
        names.AddNamespace("c", SecureConversation);
        names.AddNamespace("ds", DigitalSignature);
        names.AddNamespace("e", TestContract.Namespace);
        return names;
    }

    /// <summary>Formats a time as the messages carry it: xsd:dateTime in UTC, to the millisecond.</summary>
    public static string Time(DateTimeOffset time) => time.UtcDateTime.ToString("yyyy-MM-ddTHH:mm:ss.fffZ", CultureInfo.InvariantCulture);

    internal static string Escape(string text) => SecurityElement.Escape(text);

    /// <summary>
    /// A reply: WS-Addressing headers and a WS-Security header with a timestamp, which the client requires on every
    /// secured reply (over TLS it is not signed: the transport protects the reply).
    /// </summary>
    internal static string Reply(string action, string? relatesTo, DateTimeOffset now, string body) =>
        $"""<s:Envelope xmlns:s="{Envelope}" xmlns:a="{Addressing}" xmlns:u="{Utility}"><s:Header><a:Action s:mustUnderstand="1">{Escape(action)}</a:Action>{RelatesTo(relatesTo)}<o:Security s:mustUnderstand="1" xmlns:o="{Security}"><u:Timestamp u:Id="_0"><u:Created>{Time(now)}</u:Created><u:Expires>{Time(now.AddMinutes(5))}</u:Expires></u:Timestamp></o:Security></s:Header><s:Body>{body}</s:Body></s:Envelope>""";

    /// <summary>A SOAP 1.2 fault; <paramref name="secured"/> adds the timestamp (application faults on a live session).</summary>
    internal static string Fault(string? relatesTo, DateTimeOffset now, string code, string? subcodeNamespace, string? subcode, string reason, bool secured)
    {
        string sub = subcode is null ? "" : $"""<s:Subcode><s:Value xmlns:f="{subcodeNamespace}">f:{subcode}</s:Value></s:Subcode>""";
        string body = $"""<s:Fault><s:Code><s:Value>s:{code}</s:Value>{sub}</s:Code><s:Reason><s:Text xml:lang="en">{Escape(reason)}</s:Text></s:Reason></s:Fault>""";
        return secured
            ? Reply(FaultAction, relatesTo, now, body)
            : $"""<s:Envelope xmlns:s="{Envelope}" xmlns:a="{Addressing}"><s:Header><a:Action s:mustUnderstand="1">{FaultAction}</a:Action>{RelatesTo(relatesTo)}</s:Header><s:Body>{body}</s:Body></s:Envelope>""";
    }

    private static string RelatesTo(string? messageId) => messageId is null ? "" : $"<a:RelatesTo>{Escape(messageId)}</a:RelatesTo>";
}

/// <summary>A request the service refuses, with the SOAP fault the client is to get.</summary>
internal sealed class SoapFaultException(string reason, string code = "Sender", string? subcodeNamespace = null, string? subcode = null) : Exception(reason)
{
    public string Code { get; } = code;

    public string? SubcodeNamespace { get; } = subcodeNamespace;

    public string? Subcode { get; } = subcode;

    /// <summary>The fault WS-SecureConversation defines for a token the service does not know, or no longer accepts.</summary>
    public static SoapFaultException BadContextToken(string reason) => new(reason, "Sender", Soap.SecureConversation, "BadContextToken");

    /// <summary>WS-Security's fault for a message whose security could not be checked.</summary>
    public static SoapFaultException InvalidSecurity(string reason) => new(reason, "Sender", Soap.Security, "InvalidSecurity");

    /// <summary>WS-Security's fault for a signature or token that failed its check.</summary>
    public static SoapFaultException FailedCheck(string reason) => new(reason, "Sender", Soap.Security, "FailedCheck");

    /// <summary>WS-Security's fault for credentials that do not authenticate.</summary>
    public static SoapFaultException FailedAuthentication(string reason) => new(reason, "Sender", Soap.Security, "FailedAuthentication");
}
