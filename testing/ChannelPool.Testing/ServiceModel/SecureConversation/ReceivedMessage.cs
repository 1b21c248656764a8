using System.Globalization;
using System.Xml;

namespace ChannelPool.Testing.ServiceModel.SecureConversation;

/// <summary>A received SOAP 1.2 envelope, with the parts of its headers the service reads.</summary>
internal sealed class ReceivedMessage
{
    public ReceivedMessage(XmlDocument document)
    {
        Document = document;
        Names = Soap.Names(document.NameTable);
        XmlElement envelope = document.DocumentElement is { LocalName: "Envelope", NamespaceURI: Soap.Envelope } root
            ? root
            : throw new SoapFaultException("The request is not a SOAP 1.2 envelope.");
        Header = envelope.SelectSingleNode("s:Header", Names) as XmlElement;
        Body = envelope.SelectSingleNode("s:Body", Names) as XmlElement
            ?? throw new SoapFaultException("The SOAP envelope has no body.");
        Action = Header?.SelectSingleNode("a:Action", Names)?.InnerText.Trim()
            ?? throw new SoapFaultException("The request has no WS-Addressing Action header.");
        MessageId = Header?.SelectSingleNode("a:MessageID", Names)?.InnerText.Trim();
        SecurityHeader = Header?.SelectSingleNode("o:Security", Names) as XmlElement;
    }

    public XmlDocument Document { get; }

    public XmlNamespaceManager Names { get; }

    public XmlElement? Header { get; }

    public XmlElement Body { get; }

    public string Action { get; }

    public string? MessageId { get; }

    public XmlElement? SecurityHeader { get; }

    /// <summary>The WS-Security header, which every request on this binding must carry.</summary>
    public XmlElement Security => SecurityHeader ?? throw SoapFaultException.InvalidSecurity("The request carries no WS-Security header.");

    /// <summary>Gets the timestamp, after checking that it is present and current.</summary>
    public XmlElement CheckTimestamp(DateTimeOffset now, TimeSpan maxClockSkew)
    {
        var timestamps = Security.SelectNodes("u:Timestamp", Names)!;
        if (timestamps.Count != 1)
        {
            throw SoapFaultException.InvalidSecurity($"The security header must carry exactly one timestamp; it carries {timestamps.Count}.");
        }

        var timestamp = (XmlElement)timestamps[0]!;
        DateTimeOffset created = ReadTime(timestamp, "u:Created");
        DateTimeOffset expires = ReadTime(timestamp, "u:Expires");
        if (created > now + maxClockSkew)
        {
            throw new SoapFaultException($"The message's timestamp was created in the future ({Soap.Time(created)}, the service's time is {Soap.Time(now)}).", "Sender", Soap.Security, "MessageExpired");
        }

        if (expires <= now - maxClockSkew)
        {
            throw new SoapFaultException($"The message's timestamp expired at {Soap.Time(expires)} (the service's time is {Soap.Time(now)}).", "Sender", Soap.Security, "MessageExpired");
        }

        return timestamp;
    }

    /// <summary>Checks the UsernameToken (PasswordText) against <see cref="TestUsers"/>.</summary>
    /// <returns>The authenticated user name.</returns>
    public string AuthenticateUserName()
    {
        XmlElement token = Security.SelectSingleNode("o:UsernameToken", Names) as XmlElement
            ?? throw SoapFaultException.InvalidSecurity("The request for a security context token carries no UsernameToken.");
        string? userName = Text(token, "o:Username");
        XmlElement? password = token.SelectSingleNode("o:Password", Names) as XmlElement;
        if (password is not null && password.GetAttribute("Type") is { Length: > 0 } type && type != Soap.PasswordText)
        {
            throw SoapFaultException.InvalidSecurity($"The password type '{type}' is not supported; send PasswordText.");
        }

        return TestUsers.IsValid(userName, password?.InnerText)
            ? userName!
            : throw SoapFaultException.FailedAuthentication($"The user name or password is wrong for '{userName}'.");
    }

    public XmlElement BodyElement(string localName, string namespaceUri) =>
        Body.ChildNodes.OfType<XmlElement>().SingleOrDefault() is { } element && element.LocalName == localName && element.NamespaceURI == namespaceUri
            ? element
            : throw new SoapFaultException($"The body must hold one {localName} element of {namespaceUri}.");

    public string? Text(XmlNode node, string path) => node.SelectSingleNode(path, Names)?.InnerText.Trim();

    private DateTimeOffset ReadTime(XmlElement timestamp, string path)
    {
        string text = Text(timestamp, path) ?? throw SoapFaultException.InvalidSecurity($"The timestamp has no {path[2..]} time.");
        return DateTimeOffset.TryParse(text, CultureInfo.InvariantCulture, DateTimeStyles.AssumeUniversal, out DateTimeOffset time)
            ? time
            : throw SoapFaultException.InvalidSecurity($"The timestamp's {path[2..]} time '{text}' is not an xsd:dateTime.");
    }
}
