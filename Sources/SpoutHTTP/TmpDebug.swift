import SpoutCore
extension ConnectionLease {
    func withConnectionDebug() {
        print("DBG lease mirror", String(reflecting: self))
    }
}
