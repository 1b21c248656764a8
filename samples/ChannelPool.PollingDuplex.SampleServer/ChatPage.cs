using Microsoft.Extensions.FileProviders;

/// <summary>
/// The chat page (wwwroot), served beside the pub/sub service, using the browser client that
/// MapPollingDuplexBrowserClient serves from the ChannelPool.PollingDuplex assembly.
/// </summary>
internal static class ChatPage
{
    public static WebApplication UseChatPage(this WebApplication app)
    {
        // From the build output, where the project copies wwwroot, so the page is found whatever the working directory.
        var files = new PhysicalFileProvider(Path.Combine(AppContext.BaseDirectory, "wwwroot"));
        app.UseDefaultFiles(new DefaultFilesOptions { FileProvider = files });
        app.UseStaticFiles(new StaticFileOptions { FileProvider = files });
        app.MapPollingDuplexBrowserClient();
        return app;
    }
}
