using System.Diagnostics;
using System.ServiceModel.Channels;
using System.ServiceModel.Description;
using System.ServiceModel.Dispatcher;
using System.Xml;

namespace ChannelPool.ServiceModel;

/// <summary>
/// Sends the current activity's trace context with every call of a pooled endpoint, written by
/// <see cref="DistributedContextPropagator.Current"/> as <c>HttpClient</c> writes it (W3C <c>traceparent</c> and
/// <c>tracestate</c> by default): as HTTP headers on HTTP bindings, as SOAP headers in
/// <see cref="CallTelemetry.TraceContextNamespace"/> on the others (net.tcp), so the service can continue the caller's
/// trace. An application that sets another propagator (or <see cref="DistributedContextPropagator.CreateNoOutputPropagator"/>)
/// changes what its WCF calls send as it changes what its HTTP calls send.
/// </summary>
/// <param name="http">Whether the binding's transport is HTTP.</param>
internal sealed class TraceContextPropagation(bool http) : IEndpointBehavior, IClientMessageInspector
{
    private static readonly DistributedContextPropagator.PropagatorSetterCallback HttpSetter = static (carrier, name, value) =>
    {
        var request = (Message)carrier!;
        if (!request.Properties.TryGetValue(HttpRequestMessageProperty.Name, out var found) || found is not HttpRequestMessageProperty property)
        {
            property = new HttpRequestMessageProperty();
            request.Properties[HttpRequestMessageProperty.Name] = property;
        }

        property.Headers[name] = value;
    };

    private static readonly DistributedContextPropagator.PropagatorSetterCallback SoapSetter = static (carrier, name, value) =>
        ((Message)carrier!).Headers.Add(TraceContextHeader.Create(name, value));

    public static bool IsHttp(Binding binding) => binding.Scheme is "http" or "https";

    public object? BeforeSendRequest(ref Message request, System.ServiceModel.IClientChannel channel)
    {
        // Runs on the call's own flow, where the call's span (or the caller's activity) is current.
        if (Activity.Current is { } activity)
        {
            DistributedContextPropagator.Current.Inject(activity, request, http ? HttpSetter : SoapSetter);
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
        private static readonly XmlDictionaryString TraceParent = Names.Add(CallTelemetry.TraceParentHeader);
        private static readonly XmlDictionaryString TraceState = Names.Add(CallTelemetry.TraceStateHeader);

        /// <summary>A header named as the propagator asks: the W3C names from the dictionary, any other (baggage, a custom propagator's) as WCF writes a string header.</summary>
        public static MessageHeader Create(string name, string value) => name switch
        {
            CallTelemetry.TraceParentHeader => new TraceContextHeader(TraceParent, value),
            CallTelemetry.TraceStateHeader => new TraceContextHeader(TraceState, value),
            _ => CreateHeader(name, CallTelemetry.TraceContextNamespace, value),
        };

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
