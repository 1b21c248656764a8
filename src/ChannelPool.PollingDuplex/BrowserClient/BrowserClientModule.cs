using System.Collections.Frozen;
using System.Reflection;
using System.Security.Cryptography;
using Microsoft.AspNetCore.Http;
using Microsoft.Net.Http.Headers;

namespace ChannelPool.PollingDuplex.BrowserClient;

/// <summary>
/// The browser client's ES modules, compiled from clients/polling-duplex at build time and embedded in this assembly
/// (BrowserClient.targets): the <c>.js</c> modules, their <c>.d.ts</c> types and <c>.js.map</c> source maps. Each is
/// served as it is, with an ETag (a hash of its content) and <c>Cache-Control: no-cache</c>, so a page revalidates it on
/// every load and never runs a module older than the server it talks to, yet downloads it only when it changed.
/// </summary>
internal sealed class BrowserClientModule
{
    private const string ResourcePrefix = "ChannelPool.PollingDuplex.BrowserClient/";

    private static readonly Lazy<BrowserClientModule> Embedded = new(() => Load(typeof(BrowserClientModule).Assembly));

    private readonly FrozenDictionary<string, (byte[] Content, string ETag)> _files;

    private BrowserClientModule(FrozenDictionary<string, (byte[] Content, string ETag)> files) => _files = files;

    public static BrowserClientModule Instance => Embedded.Value;

    /// <summary>Gets the names of the module's files, for example <c>index.js</c>.</summary>
    public IEnumerable<string> Files => _files.Keys;

    /// <summary>Answers a request for <paramref name="file"/>: the file, <c>304</c> when the page has it, or <c>404</c>.</summary>
    public Task ServeAsync(HttpContext context, string file)
    {
        var response = context.Response;
        if (!_files.TryGetValue(file, out var entry))
        {
            response.StatusCode = StatusCodes.Status404NotFound;
            return Task.CompletedTask;
        }

        var headers = response.Headers;
        headers.ETag = entry.ETag;
        headers.CacheControl = "no-cache";
        headers.XContentTypeOptions = "nosniff";
        if (context.Request.Headers.IfNoneMatch.Contains(entry.ETag))
        {
            response.StatusCode = StatusCodes.Status304NotModified;
            return Task.CompletedTask;
        }

        response.ContentType = ContentTypeOf(file);
        response.ContentLength = entry.Content.Length;
        return HttpMethods.IsHead(context.Request.Method) ? Task.CompletedTask : response.Body.WriteAsync(entry.Content, context.RequestAborted).AsTask();
    }

    /// <summary>The module's files are JavaScript, TypeScript declarations and source maps.</summary>
    private static string ContentTypeOf(string file) =>
        file.EndsWith(".d.ts", StringComparison.Ordinal) ? "application/typescript; charset=utf-8"
        : file.EndsWith(".map", StringComparison.Ordinal) ? "application/json; charset=utf-8"
        : "text/javascript; charset=utf-8";

    private static BrowserClientModule Load(Assembly assembly)
    {
        var files = new Dictionary<string, (byte[], string)>(StringComparer.Ordinal);
        foreach (var name in assembly.GetManifestResourceNames().Where(n => n.StartsWith(ResourcePrefix, StringComparison.Ordinal)))
        {
            using var stream = assembly.GetManifestResourceStream(name)!;
            using var copy = new MemoryStream();
            stream.CopyTo(copy);
            var content = copy.ToArray();
            files[name[ResourcePrefix.Length..]] = (content, new EntityTagHeaderValue($"\"{Convert.ToHexStringLower(SHA256.HashData(content).AsSpan(0, 16))}\"").ToString());
        }

        if (!files.ContainsKey("index.js"))
        {
            throw new InvalidOperationException($"{assembly.GetName().Name} was built without the browser client's modules (no index.js among its resources); build it with Node.js and npm on PATH.");
        }

        return new BrowserClientModule(files.ToFrozenDictionary(StringComparer.Ordinal));
    }
}
