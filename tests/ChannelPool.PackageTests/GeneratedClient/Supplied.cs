// What the README's generated-client example leaves to the reader: the text to send. Reference.cs is the dotnet-svcutil
// client of the echo service, shared with tests/ChannelPool.ServiceModel.Generators.Tests.
internal static partial class Program
{
    private const string text = "hello";
}
