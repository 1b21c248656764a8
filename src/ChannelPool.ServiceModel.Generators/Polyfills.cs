// The compiler needs this type for records and init accessors; netstandard2.0 does not have it.
namespace System.Runtime.CompilerServices
{
    internal static class IsExternalInit
    {
    }
}
