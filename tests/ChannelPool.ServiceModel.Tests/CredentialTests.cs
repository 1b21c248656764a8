using System.ServiceModel;
using ChannelPool.ServiceModel.Tests.Fixtures;
using ChannelPool.Testing.ServiceModel;

namespace ChannelPool.ServiceModel.Tests;

/// <summary>Credentials choose the pool, as the original pool's GetPool(ClientCredentials) did.</summary>
[TestFixture]
public sealed class CredentialTests
{
    [Test]
    public async Task ProxiesWithDifferentCredentials_NeverShareAChannel()
    {
        await using var service = await TestService.StartAsync(Transport.UserName);
        await using var pool = new ServiceChannelPool<IEchoService>(
            service.Binding, service.EchoAddress, new ChannelPoolOptions { PoolSize = 2 }, service.Configure);

        var seen = new List<(string Expected, string Actual)>();
        for (var i = 0; i < 6; i++)
        {
            var asBob = i % 2 == 1;
            await using var proxy = new EchoProxy(pool);
            if (asBob)
            {
                proxy.ClientCredentials.UserName.UserName = TestUsers.Bob;
                proxy.ClientCredentials.UserName.Password = TestUsers.BobPassword;
            }

            seen.Add((asBob ? TestUsers.Bob : TestUsers.Alice, proxy.WhoAmI()));
        }

        Assert.That(seen.Select(s => s.Actual), Is.EqualTo(seen.Select(s => s.Expected)));
        var bobPool = pool.GetPool(TestCredentials.For(pool, TestUsers.Bob, TestUsers.BobPassword));
        Assert.That(bobPool, Is.Not.SameAs(pool.DefaultPool));
        Assert.That(bobPool.Name, Does.Contain(TestUsers.Bob).And.Not.Contain(TestUsers.BobPassword), "the password never appears in a pool name, log or metric tag");
    }

    [Test]
    public async Task CredentialsSetBeforeTheFirstCall_AreReadThen_NotAtConstruction()
    {
        await using var service = await TestService.StartAsync(Transport.UserName);
        await using var pool = new ServiceChannelPool<IEchoService>(service.Binding, service.EchoAddress, configureFactory: service.Configure);

        await using var proxy = new EchoProxy(pool);
        proxy.ClientCredentials.UserName.UserName = TestUsers.Bob;
        proxy.ClientCredentials.UserName.Password = TestUsers.BobPassword;

        Assert.That(proxy.WhoAmI(), Is.EqualTo(TestUsers.Bob));
    }

    [Test]
    public async Task TheSameUserWithAnotherPassword_GetsAnotherPool()
    {
        await using var service = await TestService.StartAsync(Transport.UserName);
        await using var pool = new ServiceChannelPool<IEchoService>(service.Binding, service.EchoAddress, configureFactory: service.Configure);

        var right = pool.GetPool(TestCredentials.For(pool, TestUsers.Alice, TestUsers.AlicePassword));
        var wrong = pool.GetPool(TestCredentials.For(pool, TestUsers.Alice, "not-her-password"));

        Assert.That(right, Is.SameAs(pool.DefaultPool), "the endpoint's own credentials map to the default pool");
        Assert.That(wrong, Is.Not.SameAs(right));
        Assert.That(wrong.Name, Is.Not.EqualTo(right.Name));
    }

    [Test]
    public async Task AWrongPassword_GivesAFaultNamingTheCause_AndNoStormOfRetries()
    {
        await using var service = await TestService.StartAsync(Transport.UserName);
        await using var pool = new ServiceChannelPool<IEchoService>(service.Binding, service.EchoAddress, configureFactory: service.Configure);
        var before = service.Counters.Snapshot();

        await using var proxy = new EchoProxy(pool);
        proxy.ClientCredentials.UserName.UserName = TestUsers.Alice;
        proxy.ClientCredentials.UserName.Password = "wrong";
        var fault = Assert.Throws<FaultException>(() => proxy.Echo("let me in"));

        Assert.That(fault!.Message, Does.Contain("password").And.Contain(TestUsers.Alice));
        var after = service.Counters.Snapshot() - before;
        Assert.That(after.Calls, Is.Zero, "the service dispatched nothing");
        Assert.That(after.Connections, Is.LessThanOrEqualTo(1), "one request, no retries: a fault is an answer, not a transport failure");
    }

    [Test]
    public async Task MoreCredentialSetsThanTheLimit_GetAClearError()
    {
        await using var service = await TestService.StartAsync(Transport.UserName);
        await using var pool = new ServiceChannelPool<IEchoService>(
            service.Binding, service.EchoAddress, new ChannelPoolOptions { PoolSize = 1 }, service.Configure);

        for (var i = 1; i < ServiceChannelPool<IEchoService>.MaxCredentialSets; i++)
        {
            pool.GetPool(TestCredentials.For(pool, $"user{i}", "x"));
        }

        var error = Assert.Throws<InvalidOperationException>(() => pool.GetPool(TestCredentials.For(pool, "one-too-many", "x")));
        Assert.That(error!.Message, Does.Contain(pool.Name).And.Contain("reuse credentials"));
        await using var proxy = new EchoProxy(pool);
        Assert.That(proxy.WhoAmI(), Is.EqualTo(TestUsers.Alice), "the pools already made keep working");
    }
}
