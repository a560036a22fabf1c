// A new learner, from the link to a playing video, and back again later.
import { expect, test } from "@playwright/test";
import { openHydrated, register, signIn, uniqueEmail } from "./fixtures";
import { accountId, adminApi, createCourse, enterCode, expectVideoPlays, shareState, sloppy, snapshot, sql } from "./course";

test("open link, register, enter a sloppy code, open the video, come back without a code", async ({
  page,
  browser,
}, testInfo) => {
  // The whole journey, two devices and a mailbox round trip included.
  test.setTimeout(60_000);
  const api = await adminApi();
  const course = await createCourse(api);
  const [code] = course.codes;

  await openHydrated(page, `/s/${course.slug}`);
  await expect(page.getByRole("heading", { level: 1 })).toHaveText(course.title);
  await expect(shareState(page)).toHaveAttribute("data-state", "signed-out");
  await expect(page.getByText("Lesson 1: Ownership")).toBeVisible();
  await snapshot(page, testInfo, "share-signed-out");

  // Registering returns to the share link.
  await page.getByRole("main").getByRole("link", { name: "Create account" }).click();
  const email = uniqueEmail("first");
  await register(page, email, "First Learner");
  await expect(page).toHaveURL(new RegExp(`/s/${course.slug}$`));
  await expect(shareState(page)).toHaveAttribute("data-state", "needs-code");
  await expect(page.getByText("entering it binds nothing")).toBeVisible();
  await snapshot(page, testInfo, "share-needs-code");
  // The mailed link that made the account proved its address (codes bind
  // to verified accounts; an older account without it: verify-email.spec.ts).
  await openHydrated(page, `/s/${course.slug}`);

  await expect(page.locator("body")).toHaveAttribute("data-hydrated", "true");
  await enterCode(page, sloppy(code));
  await expect(shareState(page)).toHaveAttribute("data-state", "pending");
  await expect(page.locator(".state-card")).toContainText(
    "It will be bound to this account",
  );
  await snapshot(page, testInfo, "share-pending");
  // Entering a code bound nothing.
  expect(sql(`SELECT count(*) FROM auth_codes WHERE share_id = '${course.id}' AND bound_principal IS NOT NULL`)).toBe("0");

  await page.getByRole("link", { name: "Lesson 1: Ownership" }).click();
  await expect(page.getByRole("heading", { level: 1 })).toHaveText("Lesson 1: Ownership");
  await expect(page.locator(".flash.success")).toContainText("now bound to this account");
  await expect(page.locator(".bound-note")).toContainText(`Bound to ${email} since`);
  await expectVideoPlays(page);
  await snapshot(page, testInfo, "resource-video-bound");
  expect(sql(`SELECT bound_principal FROM auth_codes WHERE share_id = '${course.id}' AND bound_principal IS NOT NULL`)).toBe(
    accountId(email),
  );

  // Reload: still has access, no code asked, no second binding message.
  await page.reload();
  await expect(page.locator(".bound-note")).toContainText(`Bound to ${email}`);
  await expect(page.locator(".flash.success")).toHaveCount(0);
  await expectVideoPlays(page);

  await page.goto(`/s/${course.slug}`);
  await expect(shareState(page)).toHaveAttribute("data-state", "has-access");
  await expect(page.getByLabel("Access code")).toHaveCount(0);
  await snapshot(page, testInfo, "share-has-access");

  // Another device: sign in, find the course under My courses, open it.
  const other = await browser.newContext();
  const phone = await other.newPage();
  await phone.setViewportSize({ width: 390, height: 844 });
  await openHydrated(phone, "/login?next=/courses");
  await signIn(phone, email);
  await expect(phone.getByRole("heading", { name: "My courses" })).toBeVisible();
  await phone.getByRole("link", { name: course.title }).click();
  await expect(shareState(phone)).toHaveAttribute("data-state", "has-access");
  await phone.getByRole("link", { name: "Welcome notes" }).click();
  await expect(phone.frameLocator("iframe.page-frame").getByRole("heading", { name: "Welcome" })).toBeVisible();
  await snapshot(phone, testInfo, "phone-page-resource");
  await other.close();

  expect(sql(`SELECT count(*) FROM auth_codes WHERE share_id = '${course.id}' AND bound_principal IS NOT NULL`)).toBe("1");
});
