using System.Globalization;
using System.ServiceModel;
using System.ServiceModel.Channels;
using System.Xml;

namespace ChannelPool.Testing.ServiceModel.NetTcp;

/// <summary>The contract a via path selects.</summary>
internal enum ServedContract
{
    /// <summary><see cref="IEchoService"/> at <c>/echo</c>.</summary>
    Echo,

    /// <summary><see cref="ISessionCounter"/> at <c>/counter</c>.</summary>
    Counter,
}

/// <summary>
/// Answers one session's requests for one test contract, by action, the way the data contract serializer on the
/// client expects: <c>&lt;OpResponse&gt;&lt;OpResult&gt;…&lt;/OpResult&gt;&lt;/OpResponse&gt;</c>.
/// </summary>
/// <param name="contract">The contract the session's via selected.</param>
/// <param name="counters">Where dispatched calls are counted.</param>
internal sealed class TestServiceDispatcher(ServedContract contract, ServerCounters counters, Func<TimeSpan> addedServiceTime)
{
    private const string FaultAction = "http://www.w3.org/2005/08/addressing/soap/fault";
    private const string AddressingFaultAction = "http://www.w3.org/2005/08/addressing/fault";
    private const string AddressingNamespace = "http://www.w3.org/2005/08/addressing";
    private const string XsiNamespace = "http://www.w3.org/2001/XMLSchema-instance";

    // One dispatcher per session, so this is the per-session state ISessionCounter promises.
    private int _sessionCount;

    /// <summary>Gets the message version the net.tcp binding's binary encoder uses.</summary>
    public static MessageVersion Version => MessageVersion.Soap12WSAddressing10;

    /// <summary>Handles one request and returns its reply, correlated to the request.</summary>
    /// <param name="request">The decoded request; its body is read before the first wait, and it is closed here.</param>
    /// <param name="cancellationToken">Cancelled when the host stops; ends a call's service time early.</param>
    /// <returns>The reply or a SOAP fault.</returns>
    public async ValueTask<Message> DispatchAsync(Message request, CancellationToken cancellationToken)
    {
        string? action = request.Headers.Action;
        int traceParent = request.Headers.FindHeader("traceparent", TestContract.TraceContextNamespace);
        if (traceParent >= 0)
        {
            // Read as text: GetHeader<string> would build a data contract serializer per call.
            using XmlDictionaryReader header = request.Headers.GetReaderAtHeader(traceParent);
            counters.TraceParentReceived(header.ReadElementContentAsString());
        }

        UniqueId? messageId = request.Headers.MessageId;
        string? operation = OperationOf(action);
        Message reply;
        if (operation == "EchoAfter")
        {
            string?[] arguments = ReadParameters(request, operation, "text", "milliseconds");
            request.Close();
            reply = await EchoAfterAsync(arguments[0], arguments[1], cancellationToken).ConfigureAwait(false);
        }
        else
        {
            reply = operation switch
            {
                "Echo" => Result(operation, ReadParameters(request, operation, "text")[0]),
                "Fail" => ApplicationFault(ReadParameters(request, operation, "reason")[0]),
                "WhoAmI" => Result(operation, "anonymous"),
                "Increment" => Result(operation, Interlocked.Increment(ref _sessionCount).ToString(CultureInfo.InvariantCulture)),
                _ => ActionNotSupported(action),
            };
            request.Close();
        }

        // After the request is read: its buffer goes back to the pool once it is closed.
        if (addedServiceTime() is { Ticks: > 0 } added)
        {
            await Task.Delay(added, cancellationToken).ConfigureAwait(false);
        }

        if (operation is not null)
        {
            counters.CallDispatched();
        }

        reply.Headers.RelatesTo = messageId;
        return reply;
    }

    private static async Task<Message> EchoAfterAsync(string? text, string? milliseconds, CancellationToken cancellationToken)
    {
        if (TestContract.ServiceTimeProblem(milliseconds, out int serviceTime) is { } problem)
        {
            return ApplicationFault(problem);
        }

        await Task.Delay(serviceTime, cancellationToken).ConfigureAwait(false);
        return Result("EchoAfter", text);
    }

    private string? OperationOf(string? action)
    {
        string prefix = contract switch
        {
            ServedContract.Echo => $"{TestContract.Namespace}/{nameof(IEchoService)}/",
            _ => $"{TestContract.Namespace}/{nameof(ISessionCounter)}/",
        };
        if (action is null || !action.StartsWith(prefix, StringComparison.Ordinal))
        {
            return null;
        }

        string operation = action[prefix.Length..];
        return (contract, operation) switch
        {
            (ServedContract.Echo, "Echo" or "Fail" or "WhoAmI" or "EchoAfter") => operation,
            (ServedContract.Counter, "Increment") => operation,
            _ => null,
        };
    }

    // The data contract serializer writes parameters in their declared order; a missing or nil one reads as null.
    private static string?[] ReadParameters(Message request, string operation, params string[] parameters)
    {
        using XmlDictionaryReader reader = request.GetReaderAtBodyContents();
        reader.ReadStartElement(operation, TestContract.Namespace);
        reader.MoveToContent();
        var values = new string?[parameters.Length];
        for (int i = 0; i < parameters.Length && reader.IsStartElement(parameters[i], TestContract.Namespace); i++)
        {
            if (reader.GetAttribute("nil", XsiNamespace) == "true")
            {
                reader.Skip();
            }
            else
            {
                values[i] = reader.ReadElementContentAsString();
            }

            reader.MoveToContent();
        }

        return values;
    }

    private static Message Result(string operation, string? value) =>
        Message.CreateMessage(Version, $"{TestContract.Namespace}/{OperationContractName(operation)}/{operation}Response", new ResultBodyWriter(operation, value));

    private static string OperationContractName(string operation) => operation == "Increment" ? nameof(ISessionCounter) : nameof(IEchoService);

    // A fault without detail: the client surfaces it as a plain FaultException whose Reason is the text.
    private static Message ApplicationFault(string? reason)
    {
        var code = FaultCode.CreateSenderFaultCode(new FaultCode("Failed", TestContract.Namespace));
        return Message.CreateMessage(Version, code, reason ?? string.Empty, FaultAction);
    }

    // The WS-Addressing fault a WCF service sends, which the client turns into an ActionNotSupportedException.
    private static Message ActionNotSupported(string? action)
    {
        var code = FaultCode.CreateSenderFaultCode(new FaultCode("ActionNotSupported", AddressingNamespace));
        string reason = $"The test host has no operation for action '{action}' at this address.";
        return Message.CreateMessage(Version, code, reason, AddressingFaultAction);
    }

    private sealed class ResultBodyWriter(string operation, string? value) : BodyWriter(isBuffered: true)
    {
        protected override void OnWriteBodyContents(XmlDictionaryWriter writer)
        {
            writer.WriteStartElement(operation + "Response", TestContract.Namespace);
            writer.WriteStartElement(operation + "Result", TestContract.Namespace);
            if (value is null)
            {
                writer.WriteAttributeString("i", "nil", XsiNamespace, "true");
            }
            else
            {
                writer.WriteString(value);
            }

            writer.WriteEndElement();
            writer.WriteEndElement();
        }
    }
}
