using System.Diagnostics;
using System.ServiceModel.Channels;
using System.ServiceModel.Description;
using System.ServiceModel.Dispatcher;
using System.Xml;

namespace ChannelPool.ServiceModel;

/// <summary>
/// Sends the current activity's W3C trace context with every call of a pooled endpoint: as <c>traceparent</c> and
/// <c>tracestate</c> HTTP headers on HTTP bindings, as SOAP headers in <see cref="CallTelemetry.TraceContextNamespace"/>
/// on the others (net.tcp), so the service can continue the caller's trace.
/// </summary>
/// <param name="http">Whether the binding's transport is HTTP.</param>
internal sealed class TraceContextPropagation(bool http) : IEndpointBehavior, IClientMessageInspector
{
    public static bool IsHttp(Binding binding) => binding.Scheme is "http" or "https";

    public object? BeforeSendRequest(ref Message request, System.ServiceModel.IClientChannel channel)
    {
        // Runs on the call's own flow, where the call's span (or the caller's activity) is current.
        if (Activity.Current is not { IdFormat: ActivityIdFormat.W3C, Id: { } traceParent } activity)
        {
            return null;
        }

        var traceState = activity.TraceStateString;
        if (http)
        {
            if (!request.Properties.TryGetValue(HttpRequestMessageProperty.Name, out var value) || value is not HttpRequestMessageProperty property)
            {
                property = new HttpRequestMessageProperty();
                request.Properties[HttpRequestMessageProperty.Name] = property;
            }

            property.Headers[CallTelemetry.TraceParentHeader] = traceParent;
            if (!string.IsNullOrEmpty(traceState))
            {
                property.Headers[CallTelemetry.TraceStateHeader] = traceState;
            }
        }
        else
        {
            request.Headers.Add(new TraceContextHeader(TraceContextHeader.TraceParent, traceParent));
            if (!string.IsNullOrEmpty(traceState))
            {
                request.Headers.Add(new TraceContextHeader(TraceContextHeader.TraceState, traceState));
            }
        }

        return null;
    }

    public void AfterReceiveReply(ref Message reply, object? correlationState)
    {
    }

    public void ApplyClientBehavior(ServiceEndpoint endpoint, ClientRuntime clientRuntime) => clientRuntime.ClientMessageInspectors.Add(this);

    public void AddBindingParameters(ServiceEndpoint endpoint, BindingParameterCollection bindingParameters)
    {
    }

    public void ApplyDispatchBehavior(ServiceEndpoint endpoint, EndpointDispatcher endpointDispatcher)
    {
    }

    public void Validate(ServiceEndpoint endpoint)
    {
    }

    /// <summary>
    /// A header whose content is its string value, as <c>GetHeader&lt;string&gt;</c> reads it, written directly:
    /// <see cref="MessageHeader.CreateHeader(string, string, object)"/> would run a data contract serializer per call.
    /// Its name and namespace are dictionary strings, so net.tcp's binary session encoder sends them once a session and
    /// refers to them by number after, rather than as text in every message.
    /// </summary>
    private sealed class TraceContextHeader(XmlDictionaryString name, string value) : MessageHeader
    {
        private static readonly XmlDictionary Names = new();
        private static readonly XmlDictionaryString NamespaceName = Names.Add(CallTelemetry.TraceContextNamespace);

        public static readonly XmlDictionaryString TraceParent = Names.Add(CallTelemetry.TraceParentHeader);

        public static readonly XmlDictionaryString TraceState = Names.Add(CallTelemetry.TraceStateHeader);

        public override string Name => name.Value;

        public override string Namespace => NamespaceName.Value;

        protected override void OnWriteStartHeader(XmlDictionaryWriter writer, MessageVersion messageVersion)
        {
            writer.WriteStartElement(name, NamespaceName);
            WriteHeaderAttributes(writer, messageVersion);
        }

        protected override void OnWriteHeaderContents(XmlDictionaryWriter writer, MessageVersion messageVersion) => writer.WriteString(value);
    }
}
