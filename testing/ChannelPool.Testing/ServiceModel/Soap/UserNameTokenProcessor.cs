using System.Security.Claims;
using System.ServiceModel;
using System.ServiceModel.Channels;
using System.Xml;
using Microsoft.AspNetCore.Http;
using SoapCore.Extensibility;

namespace ChannelPool.Testing.ServiceModel.Soap;

/// <summary>
/// Checks the WS-Security UsernameToken (PasswordText) on the <c>/username</c> endpoint against <see cref="TestUsers"/>
/// and makes the user the request's <see cref="HttpContext.User"/>.
/// </summary>
/// <remarks>
/// A message processor rather than SoapCore's <c>WsMessageFilter</c>: filters see only the message, so they can neither
/// tell the endpoints apart nor hand the user to the service; and the filter throws an <c>AuthenticationException</c>,
/// which SoapCore answers with HTTP 401, which the WCF client reports as "unauthorized with client authentication scheme
/// 'Anonymous'". A <see cref="FaultException"/> thrown here becomes a SOAP fault (HTTP 500) whose reason names the cause.
/// </remarks>
internal sealed class UserNameTokenProcessor(PathString path) : ISoapMessageProcessor
{
    private const string SecurityNamespace = "http://docs.oasis-open.org/wss/2004/01/oasis-200401-wss-wssecurity-secext-1.0.xsd";
    private const string PasswordTextType = "http://docs.oasis-open.org/wss/2004/01/oasis-200401-wss-username-token-profile-1.0#PasswordText";

    public Task<Message> ProcessMessage(Message message, HttpContext context, Func<Message, Task<Message>> next)
    {
        ArgumentNullException.ThrowIfNull(message);
        ArgumentNullException.ThrowIfNull(context);
        ArgumentNullException.ThrowIfNull(next);
        if (!context.Request.Path.StartsWithSegments(path, StringComparison.Ordinal))
        {
            return next(message);
        }

        (string userName, string? password) = ReadUserNameToken(message);
        if (!TestUsers.IsValid(userName, password))
        {
            throw new FaultException($"The user name or password is wrong for '{userName}'.");
        }

        context.User = new ClaimsPrincipal(new ClaimsIdentity([new Claim(ClaimTypes.Name, userName)], authenticationType: "UserNameToken"));
        return next(message);
    }

    private static (string UserName, string? Password) ReadUserNameToken(Message message)
    {
        int index = message.Headers.FindHeader("Security", SecurityNamespace);
        if (index < 0)
        {
            throw new FaultException("The request carries no WS-Security header, so no user name.");
        }

        string? userName = null;
        string? password = null;
        using XmlDictionaryReader reader = message.Headers.GetReaderAtHeader(index);
        while (!reader.EOF)
        {
            if (reader.NodeType == XmlNodeType.Element && reader.NamespaceURI == SecurityNamespace && reader.LocalName == "Username")
            {
                userName = reader.ReadElementContentAsString();
            }
            else if (reader.NodeType == XmlNodeType.Element && reader.NamespaceURI == SecurityNamespace && reader.LocalName == "Password")
            {
                // Digest passwords are not what the WCF client sends for UserName over TLS; refuse rather than half-support them.
                string? type = reader.GetAttribute("Type");
                if (type is not null && type != PasswordTextType)
                {
                    throw new FaultException($"The password type '{type}' is not supported; send PasswordText.");
                }

                password = reader.ReadElementContentAsString();
            }
            else
            {
                reader.Read();
            }
        }

        return userName is null
            ? throw new FaultException("The WS-Security header carries no UsernameToken.")
            : (userName, password);
    }
}
