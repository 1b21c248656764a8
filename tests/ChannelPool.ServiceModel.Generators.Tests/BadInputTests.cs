using System.ServiceModel;
using System.ServiceModel.Channels;
using ServiceReference;

namespace ChannelPool.ServiceModel.Generators.Tests;

/// <summary>The public API the generated twins call, given what it cannot use: each says which argument was wrong.</summary>
[TestFixture]
public sealed class BadInputTests
{
    private static readonly EndpointAddress Address = new("https://127.0.0.1:9/basic");

    [Test]
    public void PooledClient_RefusesANullGeneratedClient()
    {
        var error = Assert.Throws<ArgumentNullException>(() => _ = new PooledClientAttribute(null!));

        Assert.That(error.ParamName, Is.EqualTo("generatedClient"));
    }

    [TestCase(null)]
    [TestCase("")]
    public void TheGeneratedEndpointConstructor_RefusesAnEndpointWithoutAName(string? name)
    {
        var error = Assert.Catch<ArgumentException>(() => _ = new NamedEndpointProxy(new BasicHttpsBinding(), Address, name!));

        Assert.That(error!.ParamName, Is.EqualTo("endpointName"));
    }

    [Test]
    public void TheGeneratedEndpointConstructor_RefusesAMissingBindingOrAddress()
    {
        Assert.That(() => new NamedEndpointProxy(null!, Address, "e"), Throws.ArgumentNullException.With.Property("ParamName").EqualTo("binding"));
        Assert.That(() => new NamedEndpointProxy(new BasicHttpsBinding(), null!, "e"), Throws.ArgumentNullException.With.Property("ParamName").EqualTo("remoteAddress"));
    }

    [Test]
    public void UseGeneratedEndpoint_SaysWhichArgumentIsMissing()
    {
        var endpoint = new ServiceEndpointOptions<IEchoService>();
        var binding = new BasicHttpsBinding();

        Assert.That(() => endpoint.UseGeneratedEndpoint(null!, Address, "e", null), Throws.ArgumentNullException.With.Property("ParamName").EqualTo("binding"));
        Assert.That(() => endpoint.UseGeneratedEndpoint(binding, null!, "e", null), Throws.ArgumentNullException.With.Property("ParamName").EqualTo("address"));
        Assert.That(() => endpoint.UseGeneratedEndpoint(binding, Address, "", null), Throws.ArgumentException.With.Property("ParamName").EqualTo("endpointName"));
        Assert.That(() => ((ServiceEndpointOptions<IEchoService>)null!).UseGeneratedEndpoint(binding, Address, "e", null), Throws.ArgumentNullException.With.Property("ParamName").EqualTo("endpoint"));
        Assert.That(endpoint.Binding, Is.Null, "nothing was set by a refused call");
    }

    private sealed class NamedEndpointProxy(Binding binding, EndpointAddress address, string name)
        : PooledClientBase<IEchoService>(binding, address, name, configureEndpoint: null);
}
