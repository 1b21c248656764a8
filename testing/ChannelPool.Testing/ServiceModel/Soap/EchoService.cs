using System.ServiceModel;
using Microsoft.AspNetCore.Http;

namespace ChannelPool.Testing.ServiceModel.Soap;

/// <summary>The <see cref="IEchoService"/> that SoapCore dispatches to; one instance per request.</summary>
internal sealed class EchoService(ServerCounters counters, IHttpContextAccessor httpContextAccessor) : IEchoService
{
    public string Echo(string text)
    {
        counters.CallDispatched();
        return text;
    }

    public string Fail(string reason)
    {
        counters.CallDispatched();

        // SoapCore writes a thrown FaultException as a SOAP fault with this reason; the client's channel stays usable.
        throw new FaultException(reason);
    }

    public string WhoAmI()
    {
        counters.CallDispatched();

        // Only the /username endpoint authenticates (UserNameTokenProcessor sets the user); elsewhere nobody is known.
        return httpContextAccessor.HttpContext?.User.Identity is { IsAuthenticated: true, Name: { } name } ? name : "anonymous";
    }

    public async Task<string> EchoAfterAsync(string text, int milliseconds)
    {
        counters.CallDispatched();
        if (TestContract.ServiceTimeProblem(milliseconds) is { } problem)
        {
            throw new FaultException(problem);
        }

        await Task.Delay(milliseconds, httpContextAccessor.HttpContext?.RequestAborted ?? CancellationToken.None).ConfigureAwait(false);
        return text;
    }
}
