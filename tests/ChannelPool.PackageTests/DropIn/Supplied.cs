// What the README's drop-in leaves to the reader: the service contract and the service's address.
using System.ServiceModel;

#pragma warning disable CA1515 // The README's own types are public; these stand beside them.

[ServiceContract]
public interface ISomeService
{
    [OperationContract]
    string Echo(string s);
}

internal static partial class Program
{
    private static readonly Uri serviceUri = new("net.tcp://localhost:8000/some");
}
