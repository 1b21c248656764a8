using System.ServiceModel.Description;
using ChannelPool.Testing.ServiceModel;

namespace ChannelPool.ServiceModel.Tests.Fixtures;

/// <summary>Credentials as a proxy would carry them: the endpoint's own, with another user name and password.</summary>
internal static class TestCredentials
{
    public static ClientCredentials For(ServiceChannelPool<IEchoService> pool, string user, string password)
    {
        var credentials = ((ClientCredentials)pool.Endpoint.EndpointBehaviors[typeof(ClientCredentials)]).Clone();
        credentials.UserName.UserName = user;
        credentials.UserName.Password = password;
        return credentials;
    }
}
