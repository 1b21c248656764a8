// What the README's generated-client example leaves to the reader: the order to look up. Reference.cs is the
// dotnet-svcutil client of an orders service, in ServiceReference/.
internal static partial class Program
{
    private const int orderId = 42;
}
