using System.ServiceModel;
using System.ServiceModel.Description;

namespace ChannelPool.ServiceModel;

/// <summary>
/// What a generated client's <c>EndpointConfiguration</c> constructors do to their own endpoint (name it, then run the
/// <c>ConfigureEndpoint</c> partial method), done once to each channel factory of a pool instead: a pooled proxy has
/// no endpoint of its own, and an opened factory's endpoint and credentials can no longer change.
/// </summary>
internal static class GeneratedEndpoint
{
    public static Action<ChannelFactory<TContract>> ConfigureFactory<TContract>(
        string endpointName,
        Action<ServiceEndpoint, ClientCredentials>? configureEndpoint,
        Action<ChannelFactory<TContract>>? andThen = null) =>
        factory =>
        {
            factory.Endpoint.Name = endpointName;
            configureEndpoint?.Invoke(factory.Endpoint, factory.Credentials);

            // After ConfigureEndpoint, as code that sets a ClientBase's credentials after construction runs after it.
            andThen?.Invoke(factory);
        };
}
