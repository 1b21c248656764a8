using System.Net;
using System.Text.Json;
using Microsoft.AspNetCore.Builder;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Options;

namespace ChannelPool.PollingDuplex.Tests;

/// <summary>MapPollingDuplex takes its options through the options pattern, as every Microsoft.Extensions component does.</summary>
public class OptionsResolutionTests
{
    [Test]
    public async Task MapPollingDuplex_AppliesPostConfigure_AfterTheMapCallback()
    {
        await using var server = await DuplexTestServer.StartAsync(
            o => o.MaxMessageSize = 2048,
            services: s => s.PostConfigure<PollingDuplexOptions>("/duplex", o => o.MaxMessageSize = 777));
        using var http = DuplexTestServer.CreateHttpClient();

        using var open = await http.PostAsync(new Uri(server.Duplex + "/sessions"), RawSession.JsonContent("{}"));
        using var json = JsonDocument.Parse(await open.Content.ReadAsStringAsync());

        Assert.That(json.RootElement.GetProperty("maxMessageSize").GetInt32(), Is.EqualTo(777));
    }

    [Test]
    public async Task MapPollingDuplex_AppliesEveryConfigure_NotOnlyTheLast()
    {
        await using var server = await DuplexTestServer.StartAsync(services: s =>
        {
            s.Configure<PollingDuplexOptions>(o => o.MaxMessageSize = 4000);
            s.Configure<PollingDuplexOptions>("/duplex", o => o.ServerPollTimeout = TimeSpan.FromSeconds(3));
            s.Configure<PollingDuplexOptions>(o => o.InactivityTimeout = TimeSpan.FromMinutes(3));
        });
        using var http = DuplexTestServer.CreateHttpClient();

        using var open = await http.PostAsync(new Uri(server.Duplex + "/sessions"), RawSession.JsonContent("{}"));
        using var json = JsonDocument.Parse(await open.Content.ReadAsStringAsync());

        Assert.Multiple(() =>
        {
            Assert.That(json.RootElement.GetProperty("maxMessageSize").GetInt32(), Is.EqualTo(4000));
            Assert.That(json.RootElement.GetProperty("serverPollTimeoutMs").GetInt32(), Is.EqualTo(3000));
            Assert.That(json.RootElement.GetProperty("inactivityTimeoutMs").GetInt32(), Is.EqualTo(180_000));
        });
    }

    [Test]
    public void MapPollingDuplex_RunsRegisteredValidators()
    {
        var builder = WebApplication.CreateSlimBuilder();
        builder.Services.AddSingleton<IValidateOptions<PollingDuplexOptions>>(
            new ValidateOptions<PollingDuplexOptions>("/duplex", o => o.MaxMessageSize <= 1000, "the host allows at most 1000-byte messages"));
        using var app = builder.Build();

        Assert.That(
            () => app.MapPollingDuplex<RecordingHandler>("/duplex"),
            Throws.TypeOf<OptionsValidationException>().With.Message.Contains("the host allows at most 1000-byte messages"));
    }
}
