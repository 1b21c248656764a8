namespace ChannelPool.ServiceModel.Tests.Fixtures;

/// <summary>An interface without [ServiceContract], which cannot be pooled.</summary>
public interface INotAContract
{
    string Echo(string text);
}
