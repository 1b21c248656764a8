namespace ChannelPool.ServiceModel; internal static class Placeholder { }
