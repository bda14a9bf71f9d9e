//! Files and directories the CLI creates (capture and experiment directories, exports): private to
//! their owner whatever the umask (0700 and 0600), and never opened through a symbolic link someone else
//! could plant. causeway runs as root on shared hosts; an output path in a directory others can write
//! must not let them redirect or read what it writes.

use std::fs::File;
use std::io;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::Path;

/// Creates the directory `path` (not its parents), mode 0700 whatever the umask. Fails if it exists.
/// The mode is set again through a descriptor opened without following links, and the directory's
/// owner checked, so a directory swapped for a link or for someone else's in between is refused.
pub fn create_dir(path: &Path) -> io::Result<()> {
    std::fs::DirBuilder::new().mode(0o700).create(path)?;
    let d = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)?;
    let m = d.metadata()?;
    // SAFETY: geteuid has no preconditions.
    if m.uid() != unsafe { libc::geteuid() } {
        return Err(io::Error::other(
            "the new directory was replaced by another user's",
        ));
    }
    d.set_permissions(std::fs::Permissions::from_mode(0o700))
}

/// Opens `path` for writing, mode 0600 if it is created, never through a symbolic link (`O_NOFOLLOW`):
/// a new file (`create_new`), or, with `replace`, truncating a regular file that is there.
pub fn create_file(path: &Path, replace: bool) -> io::Result<File> {
    let mut o = std::fs::OpenOptions::new();
    o.write(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC);
    if replace {
        o.create(true).truncate(true);
    } else {
        o.create_new(true);
    }
    let f = o.open(path)?;
    if !f.metadata()?.is_file() {
        return Err(io::Error::other("not a regular file"));
    }
    Ok(f)
}

/// Why writing under `dir` could be interfered with by another user, if it could: it is owned by someone
/// else (who can rename or replace what is written there), or others may write in it without the
/// sticky bit. `None` for a directory only this user (or root) controls, or one that cannot be read.
pub fn exposed(dir: &Path) -> Option<String> {
    let m = std::fs::metadata(dir).ok()?;
    // SAFETY: geteuid has no preconditions.
    let me = unsafe { libc::geteuid() };
    if m.uid() != me && m.uid() != 0 {
        return Some(format!(
            "{} is owned by uid {}, who can rename or replace what is written there",
            dir.display(),
            m.uid()
        ));
    }
    let mode = m.mode();
    if mode & 0o022 != 0 && mode & 0o1000 == 0 {
        return Some(format!(
            "{} can be written by other users (mode {:o}, no sticky bit)",
            dir.display(),
            mode & 0o7777
        ));
    }
    None
}

/// A symbolic link on the way to `path` that someone else could have planted, if there is one: a link
/// owned by a user other than this process's effective user and root, who can point it anywhere
/// (root writing where a link in another user's directory leads would write wherever that user
/// chose). Every component is followed as the kernel would, links in links' targets included;
/// components that do not exist yet end the walk (they are created, not followed). Links owned by
/// this user or root are followed: only they could have made them.
pub fn planted_link(path: &Path) -> Option<String> {
    use std::path::Component;
    // SAFETY: geteuid has no preconditions.
    let me = unsafe { libc::geteuid() };
    let start = if path.is_absolute() {
        path.to_path_buf()
    } else {
        std::env::current_dir().ok()?.join(path)
    };
    let mut todo: std::collections::VecDeque<std::ffi::OsString> =
        std::collections::VecDeque::new();
    let push_front = |todo: &mut std::collections::VecDeque<_>, p: &Path| {
        for c in p.components().rev() {
            todo.push_front(c.as_os_str().to_os_string());
        }
    };
    push_front(&mut todo, &start);
    let mut at = std::path::PathBuf::from("/");
    let mut hops = 0;
    while let Some(c) = todo.pop_front() {
        match Path::new(&c).components().next() {
            Some(Component::RootDir) => at = std::path::PathBuf::from("/"),
            Some(Component::CurDir) | None => {}
            Some(Component::ParentDir) => {
                at.pop();
            }
            Some(Component::Normal(n)) => {
                let next = at.join(n);
                let Ok(m) = std::fs::symlink_metadata(&next) else {
                    // Not there (yet): made, not followed. What comes after it (a `..` back into
                    // existing directories) is walked all the same.
                    at = next;
                    continue;
                };
                if !m.file_type().is_symlink() {
                    at = next;
                    continue;
                }
                if m.uid() != me && m.uid() != 0 {
                    return Some(format!(
                        "{} is a symbolic link owned by uid {}, who can point it anywhere",
                        next.display(),
                        m.uid()
                    ));
                }
                hops += 1;
                // The kernel's own limit: a loop ends here as it would there (ELOOP), refused.
                if hops > 40 {
                    return Some(format!(
                        "{} leads through too many symbolic links",
                        next.display()
                    ));
                }
                let Ok(target) = std::fs::read_link(&next) else {
                    return Some(format!(
                        "{}: a symbolic link that cannot be read",
                        next.display()
                    ));
                };
                push_front(&mut todo, &target);
            }
            Some(Component::Prefix(_)) => return None,
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> std::path::PathBuf {
        let d = std::env::temp_dir().join(format!("cw-private-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn private_whatever_the_umask() {
        let d = scratch("umask");
        // SAFETY: umask has no preconditions; restored below (tests of this module run apart from the
        // ones that create files, which set their own modes explicitly anyway).
        let old = unsafe { libc::umask(0) };
        let dir = d.join("cap");
        let r = create_dir(&dir);
        let f = r.and_then(|()| create_file(&dir.join("x"), false));
        // SAFETY: as above.
        unsafe { libc::umask(old) };
        let f = f.unwrap();
        assert_eq!(std::fs::metadata(&dir).unwrap().mode() & 0o777, 0o700);
        assert_eq!(f.metadata().unwrap().mode() & 0o777, 0o600);
        assert!(
            create_dir(&dir).is_err(),
            "an existing directory is not reused"
        );
        assert!(create_file(&dir.join("x"), false).is_err(), "nor a file");
        assert!(create_file(&dir.join("x"), true).is_ok());
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn links_are_not_followed() {
        let d = scratch("links");
        let target = d.join("target");
        std::fs::write(&target, b"keep").unwrap();
        let link = d.join("link");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        assert!(create_file(&link, true).is_err());
        assert!(create_file(&link, false).is_err());
        assert_eq!(std::fs::read(&target).unwrap(), b"keep");
        // A world-writable directory without the sticky bit is exposed; with it, not.
        let open = d.join("open");
        std::fs::create_dir(&open).unwrap();
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).unwrap();
        assert!(exposed(&open).unwrap().contains("no sticky bit"));
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o1777)).unwrap();
        assert_eq!(exposed(&open), None);
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn links_only_their_owner_or_root_could_plant_are_followed() {
        let d = scratch("planted");
        let real = d.join("real");
        std::fs::create_dir(&real).unwrap();
        // Made by this user: followed, through a chain, `..` and a relative target included.
        std::os::unix::fs::symlink("real", d.join("mine")).unwrap();
        std::os::unix::fs::symlink(d.join("mine/../mine"), d.join("chain")).unwrap();
        assert_eq!(planted_link(&d.join("chain/not-yet/deeper")), None);
        assert_eq!(planted_link(&d.join("mine")), None);
        // A loop is the kernel's ELOOP, not a hang: refused.
        std::os::unix::fs::symlink("loop", d.join("loop")).unwrap();
        assert!(planted_link(&d.join("loop/x"))
            .unwrap()
            .contains("too many symbolic links"));
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } == 0 {
            let own = |p: &Path, uid: u32| {
                let c = std::ffi::CString::new(p.as_os_str().as_encoded_bytes()).unwrap();
                // SAFETY: lchown on a NUL-terminated path of our own scratch directory.
                assert_eq!(unsafe { libc::lchown(c.as_ptr(), uid, uid) }, 0);
            };
            let other = d.join("other");
            std::os::unix::fs::symlink(&real, &other).unwrap();
            own(&other, 65534);
            let why = planted_link(&other.join("caps")).unwrap();
            assert!(why.contains("owned by uid 65534"), "{why}");
            // Reached through a trusted link, the planted one is found all the same; and through
            // a directory not made yet and `..` (which the walk used to stop at).
            std::os::unix::fs::symlink("other", d.join("via")).unwrap();
            assert!(planted_link(&d.join("via")).is_some());
            assert!(planted_link(&d.join("new/../other/caps")).is_some());
        }
        std::fs::remove_dir_all(&d).unwrap();
    }
}
