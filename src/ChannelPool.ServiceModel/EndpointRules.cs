using System.Reflection;
using System.ServiceModel;
using System.ServiceModel.Channels;
using System.ServiceModel.Description;

namespace ChannelPool.ServiceModel;

/// <summary>
/// The checks that keep a pool out of the limits a WCF endpoint imposes. A pool holds channels open and idle for a
/// long time, which an ordinary proxy never does, so settings that work for a proxy can kill pooled channels silently.
/// </summary>
internal static class EndpointRules
{
    public static void EnsureServiceContract(Type contract)
    {
        try
        {
            _ = ContractDescription.GetContract(contract);
        }
        catch (InvalidOperationException ex)
        {
            throw new ArgumentException(
                $"{contract.Name} cannot be pooled: a pooled WCF client needs an interface marked [ServiceContract]. {ex.Message}", ex);
        }
    }

    /// <summary>Says whether the contract says <see cref="SessionMode.Required"/>.</summary>
    public static bool RequiresSession(Type contract) =>
        contract.GetCustomAttribute<ServiceContractAttribute>()?.SessionMode == SessionMode.Required;

    public static void ValidateAddress(Binding binding, EndpointAddress address)
    {
        if (!string.Equals(binding.Scheme, address.Uri.Scheme, StringComparison.OrdinalIgnoreCase))
        {
            throw new ArgumentException(
                $"The address '{address.Uri}' uses the scheme '{address.Uri.Scheme}', but the binding {binding.Name} speaks '{binding.Scheme}'. Use an address and a binding of the same transport.",
                nameof(address));
        }
    }

    /// <summary>Says whether channels of <paramref name="binding"/> carry a session the server keeps, and can time out.</summary>
    public static bool IsSessionful(Binding binding)
    {
        try
        {
            return binding.CanBuildChannelFactory<IDuplexSessionChannel>() || binding.CanBuildChannelFactory<IRequestSessionChannel>();
        }
        catch (InvalidOperationException)
        {
            // A custom binding that cannot answer without its parameters: the channel factory will say what is wrong.
            return false;
        }
    }

    /// <summary>
    /// How many leases share a channel, when the options leave it unset, on a binding whose channel is a connection with a
    /// session (<see cref="IsConnectionSession"/>). Adaptive sharing (the default) joins leases on one only while that is
    /// no slower. 16 puts 32 callers on two connections: on net.tcp with TLS it measured 0.96–1.07× of a singleton
    /// proxy at 1 to 32 callers under both service settings, against 0.75–0.85× with a channel a lease at 8 and 32
    /// (docs/configuration.md, the decision table).
    /// </summary>
    public const int LeasesPerConnection = 16;

    /// <summary>
    /// Says whether a channel of <paramref name="binding"/> is a connection of its own with a session (buffered net.tcp,
    /// named pipes): each costs the service a connection and its reads, which callers sharing one save. Channels of
    /// request-reply HTTP bindings share the factory's connections whatever the pool does, and a security session over
    /// HTTP stalls under concurrent calls (docs/perf/proxies.md), so those keep a channel a lease. A binding that can
    /// also build request channels (HTTP with WebSockets allowed, as NetHttpBinding's default, or streamed net.tcp) may
    /// carry a request-reply contract without a connection of its own, so it does not count.
    /// </summary>
    public static bool IsConnectionSession(Binding binding)
    {
        try
        {
            return binding.CanBuildChannelFactory<IDuplexSessionChannel>() && !binding.CanBuildChannelFactory<IRequestChannel>();
        }
        catch (InvalidOperationException)
        {
            return false;
        }
    }

    /// <summary>Lists the ways <paramref name="options"/> conflict with <paramref name="binding"/>; empty when none.</summary>
    public static List<string> Conflicts(string poolName, Type contract, Binding binding, bool sessionful, ChannelPoolOptions options)
    {
        var conflicts = new List<string>();
        if (options.MaxLeasesPerChannel > 1 && RequiresSession(contract))
        {
            conflicts.Add(
                $"Channel pool '{poolName}': MaxLeasesPerChannel must be 1 for {contract.Name}, whose contract requires sessions; it was {options.MaxLeasesPerChannel}. " +
                "Callers sharing a channel would share one server-side session and see each other's state.");
        }

        if (sessionful && options.ChannelLifetime >= binding.ReceiveTimeout)
        {
            conflicts.Add(
                $"Channel pool '{poolName}': ChannelLifetime ({options.ChannelLifetime}) must be shorter than the binding's ReceiveTimeout ({binding.ReceiveTimeout}). " +
                "A service ends a session that stays idle for its receive timeout, so idle pooled channels would die before they retire. " +
                "Lower ChannelLifetime, or raise ReceiveTimeout on both the client and the service.");
        }

        return conflicts;
    }
}
